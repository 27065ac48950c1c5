package perf

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/openstack"
)

const (
	// p2Nodes is how many nodes join, one after the other.
	p2Nodes = 10
	// p2Zones spreads them over zones, so that a zone aggregate is created
	// on the way for some of them.
	p2Zones = 2
	// p2Poll is how often the program looks at Nova, Placement and the
	// node's pod while a node joins.
	p2Poll = 200 * time.Millisecond
	// p2NodeTimeout bounds one node's onboarding; it is a failure.
	p2NodeTimeout = 5 * time.Minute
	// p2Target is the most the 95th percentile may take.
	p2Target = 10 * time.Second
	// p2Metric is the pool's own view of the same span.
	p2Metric = "anvil_novacompute_node_time_to_schedulable_seconds"
)

// p2ControlPlane names P2's ControlPlane, and p2Nova its Nova.
const (
	p2ControlPlane = "p2cp"
	p2Nova         = p2ControlPlane + "-nova"
)

// p2Times are the moments one node reached on its way, as the program saw
// them. Started is the nova-compute process's start; the others are when a
// poll first saw the service registered, the node's resource provider in
// Placement, its host mapped (the API lists its hypervisor), the host in
// its zone aggregate and the provider offered as an allocation candidate.
type p2Times struct {
	Started, Registered, Provider, Mapped, InAggregate, Schedulable time.Time
}

// RunP2 measures P2: a ControlPlane and one pool on the real Nova, and
// p2Nodes nodes joining one after the other, each timed from its
// nova-compute process's start until Placement offers its provider as an
// allocation candidate (VCPU:1) in its zone aggregate. The program plays
// the hypervisor operator: it adds a host to its zone aggregate as soon as
// the API lists the host's hypervisor.
func RunP2(ctx context.Context, logs, progress io.Writer) ([]Row, error) {
	fmt.Fprintln(progress, "P2: starting the OpenStack services, a management cluster and a compute cluster")
	s, err := startP2(ctx, logs)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	admin, err := s.cloud.Session(ctx)
	if err != nil {
		return nil, err
	}
	cp, pool := p2ControlPlane, "p2"
	if err := createCloudControlPlane(ctx, s.Env.Management.Client, s.cloud.Local(), cp, ""); err != nil {
		return nil, err
	}
	if err := s.createP2Pool(ctx, cp, pool); err != nil {
		return nil, err
	}
	defer s.cleanUp(admin, pool)
	var total, own Samples
	for i := range p2Nodes {
		node, zone := fmt.Sprintf("p2hv%s-%d", benchRun, i), fmt.Sprintf("p2az%s-%d", benchRun, i%p2Zones)
		s.hosts = append(s.hosts, node)
		t, err := s.join(ctx, admin, pool, node, zone)
		if err != nil {
			return nil, fmt.Errorf("node %d (%s): %w", i+1, node, err)
		}
		total, own = append(total, t.Schedulable.Sub(t.Started)), append(own, t.Provider.Sub(t.Started))
		fmt.Fprintf(progress, "P2: node %2d schedulable after %s: registered +%s, provider +%s, mapped +%s, in its zone aggregate +%s\n",
			i+1, Seconds(t.Schedulable.Sub(t.Started)), Seconds(t.Registered.Sub(t.Started)), Seconds(t.Provider.Sub(t.Started)),
			Seconds(t.Mapped.Sub(t.Started)), Seconds(t.InAggregate.Sub(t.Started)))
	}
	p95 := total.Percentile(0.95)
	rows := []Row{
		{ID: "P2", What: "nova-compute alone: process start to its provider in Placement (baseline), p50", Value: Seconds(own.Median())},
		{ID: "P2", What: fmt.Sprintf("time to schedulable, %d nodes, p50", len(total)), Value: Seconds(total.Median()),
			Baseline: Seconds(own.Median()), Ratio: Ratio(total.Median(), own.Median())},
		{ID: "P2", What: fmt.Sprintf("time to schedulable, %d nodes, p95", len(total)), Value: Seconds(p95),
			Baseline: Seconds(own.Percentile(0.95)), Ratio: Ratio(p95, own.Percentile(0.95)), Target: "<= 10.0 s", Met: Met(p95 <= p2Target)},
	}
	return append(rows, s.metricRows(ctx, pool, progress)...), nil
}

// join registers a node for the pool and follows it until Placement
// offers it.
func (s *p2Stack) join(ctx context.Context, admin *openstack.Session, pool, node, zone string) (p2Times, error) {
	if err := s.startRunner(s.compute, podrunner.Node{Name: node, Labels: map[string]string{
		corev1.LabelTopologyZone: zone, p2PoolKey: pool,
	}}); err != nil {
		return p2Times{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p2NodeTimeout)
	defer cancel()
	w := &p2Watch{s: s, admin: admin, node: node, zone: zone}
	for w.t.Schedulable.IsZero() {
		select {
		case <-ctx.Done():
			return w.t, fmt.Errorf("not schedulable within %s (reached: %+v): %w", p2NodeTimeout, w.t, w.err)
		case <-time.After(p2Poll):
		}
		w.step(ctx)
	}
	return w.t, nil
}

// p2Watch follows one node.
type p2Watch struct {
	s           *p2Stack
	admin       *openstack.Session
	node, zone  string
	t           p2Times
	provider    string // the node's resource provider
	aggregateID string // the zone aggregate's UUID in Placement
	err         error
}

// step looks once at what the node has not reached yet, in the order it
// reaches it, and stops at the first thing missing. An error is kept for
// the timeout's message and the next poll tries again.
func (w *p2Watch) step(ctx context.Context) {
	now := time.Now()
	if w.t.Started.IsZero() {
		w.t.Started, w.err = w.s.processStart(ctx, w.node)
	}
	if w.t.Registered.IsZero() {
		svcs, err := w.admin.ListComputeServices(ctx, w.node)
		if w.err = err; err != nil || len(svcs) == 0 {
			return
		}
		w.t.Registered = now
	}
	if w.provider == "" {
		rps, err := w.admin.ListResourceProviders(ctx, w.node)
		if w.err = err; err != nil || len(rps) == 0 {
			return
		}
		w.provider, w.t.Provider = rps[0].UUID, now
	}
	if w.t.Mapped.IsZero() {
		hvs, err := w.admin.ListHypervisors(ctx)
		if w.err = err; err != nil || !slices.ContainsFunc(hvs, func(h openstack.Hypervisor) bool { return h.ServiceHost == w.node }) {
			return
		}
		w.t.Mapped = now
	}
	if w.t.InAggregate.IsZero() && !w.addToZoneAggregate(ctx) {
		return
	}
	offered, err := w.admin.AllocationCandidates(ctx, "VCPU:1", w.aggregateID, w.provider)
	if w.err = err; err == nil && len(offered) > 0 && !w.t.Started.IsZero() {
		w.t.Schedulable = time.Now()
	}
}

// addToZoneAggregate is the hypervisor operator's part: once the pool has
// created the zone's aggregate, it puts the host in.
func (w *p2Watch) addToZoneAggregate(ctx context.Context) bool {
	aggs, err := w.admin.ListAggregates(ctx)
	if w.err = err; err != nil {
		return false
	}
	i := slices.IndexFunc(aggs, func(a openstack.Aggregate) bool { return a.Name == w.zone })
	if i < 0 {
		return false
	}
	if !slices.Contains(aggs[i].Hosts, w.node) {
		if w.err = w.admin.AddAggregateHost(ctx, aggs[i].ID, w.node); w.err != nil {
			return false
		}
	}
	w.aggregateID, w.t.InAggregate = aggs[i].UUID, time.Now()
	return true
}

// processStart is when the nova-compute process of the node's pod
// started: from /proc, to the hundredth of a second, since the pod runner
// runs it on this host; otherwise the container's startedAt, which the
// API keeps in whole seconds.
func (s *p2Stack) processStart(ctx context.Context, node string) (time.Time, error) {
	pods, err := s.typed[s.compute.Name].CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return time.Time{}, err
	}
	for _, pod := range pods.Items {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name != "nova-compute" || cs.State.Running == nil {
				continue
			}
			if at, err := ProcessStart(cs.ContainerID); err == nil {
				return at, nil
			}
			return cs.State.Running.StartedAt.Time, nil
		}
	}
	return time.Time{}, nil
}

// Seconds prints a duration in seconds with one decimal.
func Seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}
