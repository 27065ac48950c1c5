package perf

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/osim"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// Scale shapes P4: how many compute clusters, nodes on each and pools on
// each. The nodes of a cluster are spread evenly over its pools.
type Scale struct {
	Clusters, NodesPerCluster, PoolsPerCluster int
}

// DefaultScale is issue #18's P4: three clusters of 1,000 nodes, 30 pools.
var DefaultScale = Scale{Clusters: 3, NodesPerCluster: 1000, PoolsPerCluster: 10}

// P4 targets.
const (
	p4ReadyTarget = 60 * time.Second
	p4RSSTarget   = 200 << 20
)

// ScaleResult is what one P4 run measured.
type ScaleResult struct {
	Scale
	// Ready is from the first object applied until every pool is Ready.
	Ready time.Duration
	// IdleRSS is the operator's resident set before anything was applied;
	// PeakRSS its high-water mark at the end.
	IdleRSS, PeakRSS int64
	// Reconcile is the operator's reconcile time histogram over the run,
	// all controllers together, and Pools the pool controller's alone.
	Reconcile, Pools Histogram
	// Steps is the time the pool passes spent in each step over the run,
	// and StepsAfterRollout the part of it after the last DaemonSet rolled
	// out: where the operator's share went.
	Steps, StepsAfterRollout map[string]Total
	// Requests is how many requests the simulator served.
	Requests int64
	// Milestones attribute Ready to its stages.
	Milestones
}

// scaleTimeout bounds the wait for every pool to turn Ready; it is a
// failure, not a measurement.
const scaleTimeout = 25 * time.Minute

// MeasureScale starts the clusters, the simulator and the operator as a
// process, applies one ControlPlane and its pools, and measures until
// every pool is Ready. The operator's log goes to logs, progress to
// progress.
func MeasureScale(ctx context.Context, sc Scale, logs, progress io.Writer) (*ScaleResult, error) {
	fmt.Fprintf(progress, "P4: starting a management cluster and %d compute clusters of %d kwok nodes\n", sc.Clusters, sc.NodesPerCluster)
	env, err := testenv.Start(ctx, testenv.Options{ComputeClusters: sc.Clusters})
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	s := &Stack{Env: env, typed: map[string]kubernetes.Interface{}}
	for _, c := range append([]*testenv.Cluster{env.Management}, env.Compute...) {
		if s.typed[c.Name], err = kubernetes.NewForConfig(c.Config); err != nil {
			return nil, err
		}
	}
	// The Nova's control plane and its Jobs run on one kwok node.
	if err := env.Management.StartWorkloads(ctx, testenv.Node{Name: "mgmt-node"}); err != nil {
		return nil, err
	}
	for _, c := range env.Compute {
		if err := c.StartWorkloads(ctx); err != nil {
			return nil, err
		}
		if err := createScaleNodes(ctx, c, sc.NodesPerCluster, sc.PoolsPerCluster); err != nil {
			return nil, fmt.Errorf("nodes of %s: %w", c.Name, err)
		}
	}

	sim, err := startSimulator(ctx, env)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sim.Close() }()

	dir, err := os.MkdirTemp("", "anvil-bench-p4-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, err := BuildOperator(ctx, dir)
	if err != nil {
		return nil, err
	}
	op, err := StartOperatorProcess(ctx, env, bin, dir, logs)
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	return s.measureScale(ctx, sc, sim, op, progress)
}

// startSimulator starts osim and its watches: the nova-compute pods of
// every compute cluster, the discovery Jobs of the management cluster.
// The watches end with ctx.
func startSimulator(ctx context.Context, env *testenv.Environment) (*osim.Server, error) {
	sim, err := osim.Start()
	if err != nil {
		return nil, err
	}
	for _, c := range env.Compute {
		if err := sim.FollowComputePods(ctx, c.Config); err != nil {
			_ = sim.Close()
			return nil, err
		}
	}
	if err := sim.FollowDiscovery(ctx, env.Management.Config); err != nil {
		_ = sim.Close()
		return nil, err
	}
	return sim, nil
}

// measureScale applies the ControlPlane and the pools and waits for them.
func (s *Stack) measureScale(ctx context.Context, sc Scale, sim *osim.Server, op *OperatorProcess, progress io.Writer) (*ScaleResult, error) {
	res := &ScaleResult{Scale: sc}
	var err error
	if _, res.IdleRSS, err = op.Memory(); err != nil {
		return nil, err
	}
	before, err := op.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	ports, err := netutil.FreeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	const cp = "p4"
	start := time.Now()
	if err := s.createScaleControlPlane(ctx, cp, sim.KeystoneURL(), int32(ports[0])); err != nil {
		return nil, err
	}
	for _, c := range s.Env.Compute {
		for i := range sc.PoolsPerCluster {
			if err := s.createPool(ctx, cp, scalePoolName(c.Name, i), c.Name); err != nil {
				return nil, err
			}
		}
	}
	// The steps' totals when the rollout is done, to tell the operator's
	// share apart; an unanswered scrape leaves the run's start in place.
	atRollout := before
	rolled := func() {
		if text, err := op.Metrics(ctx); err == nil {
			atRollout = text
		}
	}
	if err := s.waitPoolsReady(ctx, sc, novaOf(cp), &res.Milestones, sim, start, rolled, progress); err != nil {
		// What was reached still says something about memory.
		if peak, _, merr := op.Memory(); merr == nil {
			err = fmt.Errorf("%w (operator peak RSS so far %d MB)", err, peak>>20)
		}
		return nil, err
	}
	res.Ready = time.Since(start)
	after, err := op.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	if res.PeakRSS, _, err = op.Memory(); err != nil {
		return nil, err
	}
	const metric = "controller_runtime_reconcile_time_seconds"
	res.Reconcile = ParseHistogram(after, metric, nil).Minus(ParseHistogram(before, metric, nil))
	isPool := func(labels string) bool { return strings.Contains(labels, `controller="novacompute-controller"`) }
	res.Pools = ParseHistogram(after, metric, isPool).Minus(ParseHistogram(before, metric, isPool))
	steps := func(text string) map[string]Total { return ParseTotals(text, stepMetric, "step") }
	res.Steps = MinusTotals(steps(after), steps(before))
	res.StepsAfterRollout = MinusTotals(steps(after), steps(atRollout))
	res.Requests = sim.Requests()
	return res, nil
}

// stepMetric is the pool pass's time per step.
const stepMetric = "anvil_novacompute_pass_step_seconds"

// waitPoolsReady polls the pools until want of them are Ready, printing
// how far they are every few seconds. rolled is called once, as soon as
// the rollout milestone is seen.
func (s *Stack) waitPoolsReady(ctx context.Context, sc Scale, nova string, m *Milestones, sim *osim.Server, start time.Time, rolled func(), progress io.Writer) error {
	want := sc.Clusters * sc.PoolsPerCluster
	deadline := start.Add(scaleTimeout)
	lastReport, lastObserved := start, time.Time{}
	for {
		if time.Since(lastObserved) >= time.Second {
			lastObserved = time.Now()
			s.observe(ctx, m, sc, nova, time.Since(start))
			if m.Rolled != 0 && rolled != nil {
				rolled()
				rolled = nil
			}
		}
		pools := &novav1alpha1.NovaComputeList{}
		// A loaded apiserver drops a request now and then; the next poll
		// asks again, and the deadline bounds the patience.
		listErr := s.Env.Management.Client.List(ctx, pools, client.InNamespace(Namespace))
		ready, waiting := 0, map[string]int{}
		for i := range pools.Items {
			p := &pools.Items[i]
			if apimeta.IsStatusConditionTrue(p.Status.Conditions, anvilmeta.ReadyCondition) {
				ready++
			} else if c := apimeta.FindStatusCondition(p.Status.Conditions, anvilmeta.ReadyCondition); c != nil {
				// The rollup's message starts with the first condition
				// that holds the pool back.
				first, _, _ := strings.Cut(c.Message, ":")
				waiting[truncate(first, 40)]++
			}
		}
		if listErr == nil && ready >= want {
			// The last sample may predate the rollout; without one more,
			// the operator's share would read as the whole run.
			s.observe(ctx, m, sc, nova, time.Since(start))
			if m.Rolled != 0 && rolled != nil {
				rolled()
			}
			svcs, hvs := sim.Counts()
			fmt.Fprintf(progress, "P4: %5.1fs: all %d pools Ready; %d compute services, %d mapped; Nova installed at %.1fs, DaemonSets rolled out at %.1fs\n",
				time.Since(start).Seconds(), want, svcs, hvs, m.NovaInstalled.Seconds(), m.Rolled.Seconds())
			return nil
		}
		if time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			svcs, hvs := sim.Counts()
			fmt.Fprintf(progress, "P4: %5.1fs: %d/%d pools Ready; %d compute services, %d mapped; held back by %v\n",
				time.Since(start).Seconds(), ready, want, svcs, hvs, waiting)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pools Ready after %s; held back by %v", ready, want, scaleTimeout, waiting)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// p4ShareTarget is the most the operator may take after the Kubernetes
// side is done: from the last DaemonSet rolled out to every pool Ready.
const p4ShareTarget = 10 * time.Second

// operatorShareRow reports the operator's share of P4, or "-" when the
// rollout was never sampled.
func operatorShareRow(ready, rolled time.Duration) Row {
	row := Row{ID: "P4", What: "  operator's share: last DaemonSet rolled out to every pool Ready", Value: "-",
		Target: fmt.Sprintf("<= %.0f s", p4ShareTarget.Seconds())}
	if rolled > 0 {
		share := max(ready-rolled, 0)
		row.Value, row.Met = fmt.Sprintf("%.1f s", share.Seconds()), Met(share <= p4ShareTarget)
	}
	return row
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// RunP4 measures P4 at sc and returns its rows against the targets.
func RunP4(ctx context.Context, sc Scale, logs, progress io.Writer) ([]Row, error) {
	r, err := MeasureScale(ctx, sc, logs, progress)
	if err != nil {
		return nil, err
	}
	mb := func(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }
	ms := func(sec float64) string {
		if math.IsNaN(sec) {
			return "-"
		}
		return Millis(time.Duration(sec * float64(time.Second)))
	}
	fmt.Fprintf(progress, "P4: %d pools Ready in %s; operator RSS %s idle, %s peak; %.0f reconciles (%.0f of pools), p99 %s (pools %s); %d simulator requests\n",
		r.Clusters*r.PoolsPerCluster, r.Ready.Round(time.Millisecond), mb(r.IdleRSS), mb(r.PeakRSS),
		r.Reconcile.Count(), r.Pools.Count(), ms(r.Reconcile.Quantile(0.99)), ms(r.Pools.Quantile(0.99)), r.Requests)
	fmt.Fprintf(progress, "P4: pool pass steps over the run: %s\n", FormatTotals(r.Steps))
	fmt.Fprintf(progress, "P4: pool pass steps after the rollout: %s\n", FormatTotals(r.StepsAfterRollout))
	shape := fmt.Sprintf("%dx%d nodes, %d pools", r.Clusters, r.NodesPerCluster, r.Clusters*r.PoolsPerCluster)
	return []Row{
		{ID: "P4", What: "apply to all pools Ready, " + shape + " (simulated Nova)", Value: fmt.Sprintf("%.1f s", r.Ready.Seconds()),
			Target: fmt.Sprintf("<= %.0f s", p4ReadyTarget.Seconds()), Met: Met(r.Ready <= p4ReadyTarget)},
		{ID: "P4", What: "  of which: Nova installed (its database Jobs on kwok)", Value: fmt.Sprintf("%.1f s", r.NovaInstalled.Seconds())},
		{ID: "P4", What: "  of which: every DaemonSet rolled out (scheduler, kcm, kwok)", Value: fmt.Sprintf("%.1f s", r.Rolled.Seconds())},
		operatorShareRow(r.Ready, r.Rolled),
		{ID: "P4", What: "operator peak RSS (VmHWM of its process)", Value: mb(r.PeakRSS), Baseline: mb(r.IdleRSS) + " idle",
			Target: "<= " + mb(p4RSSTarget), Met: Met(r.PeakRSS <= p4RSSTarget)},
		{ID: "P4", What: "reconcile time p99, all controllers", Value: ms(r.Reconcile.Quantile(0.99))},
		{ID: "P4", What: "  reconcile time p99, pool controller", Value: ms(r.Pools.Quantile(0.99))},
	}, nil
}
