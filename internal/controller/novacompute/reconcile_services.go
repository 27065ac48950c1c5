package novacompute

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/workload"
	"github.com/anvil/anvil/internal/openstack"
)

// reconcileServices follows each node's nova-compute service in Nova. It
// gathers what Nova and the pool's cluster report, lets DecideService move
// each node on, does the calls it asks for, and lets DecideServicesReady
// set the condition. Only a failed listing stops the pass: a call that
// fails for one node is reported and retried, and never keeps the other
// nodes from their next transition.
func (r *Reconciler) reconcileServices(ctx context.Context, p *pass) (flow.Outcome, error) {
	cloud, err := p.openCloud(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.ServicesReadyCondition, "authenticating as the Nova's service user", err)
	}
	svcs, err := r.listings.services.get(ctx, p.listingKey(), p.started, func(ctx context.Context) ([]openstack.ComputeService, error) {
		return cloud.ListComputeServices(ctx, "")
	})
	if err != nil {
		return p.computeAPIError(novav1alpha1.ServicesReadyCondition, "listing the compute services", err)
	}
	run := &servicesRun{r: r, p: p, cloud: cloud, byHost: map[string][]openstack.ComputeService{}, now: r.now()}
	for _, s := range svcs {
		run.byHost[s.Host] = append(run.byHost[s.Host], s)
	}
	// A copy: dropping an entry must not shift the loop.
	entries := append([]novav1alpha1.NovaComputeNode(nil), p.pool.Status.Nodes...)
	results := make([]ServiceResult, 0, len(entries))
	for _, e := range entries {
		d, err := run.node(ctx, e)
		if err != nil {
			return flow.Continue, err
		}
		results = append(results, ServiceResult{Node: e.Name, ServiceDecision: d})
	}
	var discovery Discovery
	if slices.ContainsFunc(results, func(res ServiceResult) bool { return res.Action == ServiceDiscover }) {
		newest, err := run.newestUnmappedStart(ctx, results)
		if err != nil {
			return flow.Continue, err
		}
		discovery = r.runDiscovery(ctx, p, newest)
	}
	report := DecideServicesReady(results, discovery)
	conditionsOf(p.pool).Set(novav1alpha1.ServicesReadyCondition, report.Status, report.Reason, report.Message)
	// Nova cannot be watched: a settled pool polls it.
	return flow.Merge(report.Outcome, flow.Requeue(r.resync())), nil
}

// servicesRun is one Services step: what it read from Nova and the pool's
// cluster. The hypervisors and the pods are listed once, and only when a
// node asks: the hypervisors while a node waits to be mapped, the pods
// while a node waits for its service or is releasing.
type servicesRun struct {
	r      *Reconciler
	p      *pass
	cloud  Cloud
	byHost map[string][]openstack.ComputeService
	now    time.Time
	mapped map[string]bool // hosts among the hypervisors
	pods   []corev1.Pod    // the pool's pods, listed on first need
}

// node mirrors a node's service into its entry, then asks DecideService,
// does what it says and asks again with the answer, until the decision is
// final, which it writes into the entry. The service is mirrored first,
// so a listing that stops the pass still leaves it in the status.
func (x *servicesRun) node(ctx context.Context, e novav1alpha1.NovaComputeNode) (ServiceDecision, error) {
	if e.Phase == novav1alpha1.NodeConflict {
		// The service is the holding pool's; this pool mirrors nothing of
		// it. The Nodes step rebuilds a Conflict entry on every pass, so a
		// registration time stamped here would change, and be written, on
		// every pass.
		return DecideService(e, ServiceObs{}), nil
	}
	cur := x.p.entry(e.Name)
	obs := ServiceObs{Handover: x.p.decision.Handover[e.Name]}
	if svc, ok := ServiceOf(x.byHost[e.Name], e.AdoptedServiceID); ok {
		if DisableObserved(e, svc, disabledReason(x.p.pool)) {
			x.disabledEvent(e.Name, svc.DisabledReason)
		}
		obs.Service = &svc
		cur.ServiceID, cur.ServiceStatus, cur.ServiceState, cur.DisabledReason = svc.ID, svc.Status, svc.State, svc.DisabledReason
		if cur.ServiceRegisteredAt == nil {
			t := metav1.NewTime(x.now)
			cur.ServiceRegisteredAt = &t
		}
	} else {
		cur.ServiceID, cur.ServiceStatus, cur.ServiceState, cur.DisabledReason = "", "", "", ""
	}
	for {
		d := DecideService(e, obs)
		if d.Action.Final() {
			x.settle(e, cur, obs, d)
			return d, nil
		}
		var err error
		switch d.Action {
		case ServiceCheckMapping:
			obs.Mapped, err = x.hostMapped(ctx, e.Name)
		case ServiceCheckPods:
			obs.PodRunning, err = x.podRunning(ctx, e.Name)
		case ServiceCheckStart:
			obs.ComputeFresh, err = x.computeFresh(ctx, e.Name)
		default:
			x.call(ctx, e.Name, d.Action, cur, &obs)
		}
		if err != nil {
			return d, err
		}
	}
}

// call makes the Nova call an action asks for and notes the answer in obs.
// A failure is noted too, not returned: DecideService reports it.
func (x *servicesRun) call(ctx context.Context, name string, action ServiceAction, cur *novav1alpha1.NovaComputeNode, obs *ServiceObs) {
	pool := x.p.pool
	switch action {
	case ServiceDisable:
		reason := disabledReason(pool)
		if err := x.cloud.DisableService(ctx, obs.Service.ID, reason); err != nil {
			obs.Failed = "disabling the service of " + name + ": " + err.Error()
			return
		}
		obs.Service.Status, obs.Service.DisabledReason = "disabled", reason
		cur.ServiceStatus, cur.DisabledReason = "disabled", reason
		x.disabledEvent(name, reason)
	case ServiceCountServers:
		n, err := x.cloud.CountServersOnHost(ctx, name)
		if err != nil {
			obs.Failed = "counting the servers on " + name + ": " + err.Error()
			return
		}
		obs.Servers = &n
	case ServiceDelete:
		err := x.cloud.DeleteService(ctx, obs.Service.ID)
		switch {
		case err != nil && openstack.IsConflict(err):
			// Servers came back since they were counted.
			obs.DeleteRefused = true
		case err != nil:
			obs.Failed = "deleting the service of " + name + ": " + err.Error()
		default:
			obs.Deleted = true
			x.r.event(pool, nodeRef(name), false, novav1alpha1.ComputeServiceDeletedEvent, "Release",
				"Deleted the nova-compute service of %s: no server is left on it and its pod is gone", name)
		}
	}
}

// disabledEvent says that the pool disabled a draining node's service.
func (x *servicesRun) disabledEvent(name, reason string) {
	x.r.event(x.p.pool, nodeRef(name), false, novav1alpha1.ComputeServiceDisabledEvent, "Drain",
		"Disabled the nova-compute service of %s: %s", name, reason)
}

// notAdoptedEvent says that the pool let a node go and left the service
// of its host name as it is, because it is not the pool's own.
func (x *servicesRun) notAdoptedEvent(e novav1alpha1.NovaComputeNode, id string) {
	why := "the pool never adopted a service there"
	if e.AdoptedServiceID != "" {
		why = "the pool adopted service " + e.AdoptedServiceID + " there, not this one"
	}
	x.r.event(x.p.pool, nodeRef(e.Name), true, novav1alpha1.ComputeServiceNotAdoptedEvent, "Release",
		"Let %s go without disabling or deleting the nova-compute service %s of its host name: %s", e.Name, id, why)
}

// settle writes a node's final decision into its entry.
func (x *servicesRun) settle(e novav1alpha1.NovaComputeNode, cur *novav1alpha1.NovaComputeNode, obs ServiceObs, d ServiceDecision) {
	if d.Action == ServiceDrop {
		if d.Bucket == BucketNotAdopted {
			x.notAdoptedEvent(e, obs.Service.ID)
		}
		x.p.dropEntry(e.Name)
		return
	}
	if d.Bucket == BucketNoService {
		// The service is gone: onboarding starts again with the next one.
		cur.ServiceRegisteredAt = nil
	}
	cur.AdoptedServiceID = AdoptedAfter(e, obs, d)
	if obs.Servers != nil {
		cur.Instances = d.Instances
	}
	cur.Phase = d.Phase
	if e.Phase == novav1alpha1.NodePending && d.Phase == novav1alpha1.NodeActive {
		x.r.onboarding.mapped(x.p.pool, *cur, x.now)
	}
}

// hostMapped tells whether a host is among the hypervisors. A failed
// listing stops the pass.
func (x *servicesRun) hostMapped(ctx context.Context, host string) (*bool, error) {
	if x.mapped == nil {
		hvs, err := x.r.listings.hypervisors.get(ctx, x.p.listingKey(), x.p.started, x.cloud.ListHypervisors)
		if err != nil {
			_, err = x.p.computeAPIError(novav1alpha1.ServicesReadyCondition, "listing the hypervisors", err)
			return nil, err
		}
		x.mapped = map[string]bool{}
		for _, h := range hvs {
			name := h.ServiceHost
			if name == "" {
				name = h.Hostname
			}
			x.mapped[name] = true
		}
	}
	return ptr.To(x.mapped[host]), nil
}

// listPods lists the pool's pods on its cluster once per step. A failed
// listing stops the pass.
func (x *servicesRun) listPods(ctx context.Context) ([]corev1.Pod, error) {
	if x.pods == nil {
		pool := x.p.pool
		pods := &corev1.PodList{}
		if err := x.p.reader().List(ctx, pods, client.InNamespace(pool.Namespace), client.MatchingLabels(PodLabels(pool.Name))); err != nil {
			return nil, flow.Fail(novav1alpha1.ServicesReadyCondition, novav1alpha1.PodListErrorReason, fmt.Errorf("listing the pool's pods: %w", err))
		}
		x.pods = append([]corev1.Pod{}, pods.Items...)
	}
	return x.pods, nil
}

// podRunning tells whether a pod of the pool runs on a node.
func (x *servicesRun) podRunning(ctx context.Context, node string) (*bool, error) {
	pods, err := x.listPods(ctx)
	if err != nil {
		return nil, err
	}
	return ptr.To(slices.ContainsFunc(pods, func(pod corev1.Pod) bool { return pod.Spec.NodeName == node })), nil
}

// computeFresh tells whether the nova-compute container on a node started
// less than registrationWindow ago.
func (x *servicesRun) computeFresh(ctx context.Context, node string) (*bool, error) {
	pods, err := x.listPods(ctx)
	if err != nil {
		return nil, err
	}
	started, ok := ComputeStarted(pods, node)
	return ptr.To(ok && x.now.Sub(started) < registrationWindow), nil
}

// newestUnmappedStart is the latest nova-compute start among the nodes
// waiting for discovery, or zero when no pod reports one.
func (x *servicesRun) newestUnmappedStart(ctx context.Context, results []ServiceResult) (time.Time, error) {
	pods, err := x.listPods(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var newest time.Time
	for _, res := range results {
		if res.Action != ServiceDiscover {
			continue
		}
		if started, ok := ComputeStarted(pods, res.Node); ok && started.After(newest) {
			newest = started
		}
	}
	return newest, nil
}

// runDiscovery drives the Nova's shared discovery Job and describes its
// state: it creates an absent Job, leaves a running one, and replaces a
// finished one 30 s after it ended, warning when it failed, or at once
// when it started before the newest unmapped host's nova-compute did.
func (r *Reconciler) runDiscovery(ctx context.Context, p *pass, newestStart time.Time) Discovery {
	nova := p.nova
	if nova.Status.ManageConfigSecretRef == nil {
		return Discovery{Err: fmt.Errorf("host discovery needs the Nova's apiDatabase and database; Nova %s declares none, so hosts are mapped only by the scheduler's periodic discovery", nova.Name)}
	}
	// The Job is the Nova's and shared by its pools: one pool's pass at a
	// time reads and replaces it, so two never create or delete it at once.
	unlock, err := r.perNova.lock(ctx, "discovery/"+nova.Namespace+"/"+nova.Name)
	if err != nil {
		return Discovery{Err: fmt.Errorf("waiting for another pool's look at the discovery Job: %w", err)}
	}
	defer unlock()
	job := BuildDiscoverJob(nova, nova.Status.ManageConfigSecretRef.Name)
	live := &batchv1.Job{}
	err = p.novaCluster.Reader.Get(ctx, client.ObjectKeyFromObject(job), live)
	switch {
	case apierrors.IsNotFound(err):
		// A Job runs once; it is created, never updated.
		if err := p.novaCluster.Apply(ctx, nova, job, childwriter.CreateOnly); err != nil {
			return Discovery{Err: fmt.Errorf("creating Job %s: %w", job.Name, err)}
		}
		r.event(p.pool, nil, false, novav1alpha1.HostDiscoveryStartedEvent, "Discover", "Started Job %s/%s to map new hosts into their cell", job.Namespace, job.Name)
		return Discovery{State: "Job " + job.Name + " started"}
	case err != nil:
		return Discovery{Err: fmt.Errorf("reading Job %s: %w", job.Name, err)}
	case !childwriter.Controls(nova, live, r.Scheme):
		return Discovery{Err: fmt.Errorf("a Job %s/%s exists that is not the Nova's; rename or delete it", live.Namespace, live.Name)}
	case !live.DeletionTimestamp.IsZero():
		// A Job still on its way out is neither deleted nor reported
		// again. It is looked at on the usual pace, not every second, so
		// one held by a finalizer costs no more than a running one.
		return Discovery{State: "Job " + live.Name + " being deleted"}
	}
	done, failed, at := workload.JobFinished(live)
	if !done {
		return Discovery{State: "Job " + live.Name + " running"}
	}
	result := "succeeded"
	if failed {
		result = "failed"
	}
	if !JobPredates(live, newestStart) && r.now().Sub(at.Time) < discoveryKeep*time.Second {
		return Discovery{State: "Job " + live.Name + " " + result}
	}
	if failed {
		r.event(p.pool, nil, true, novav1alpha1.HostDiscoveryFailedEvent, "Discover", "Job %s/%s failed; the next pass starts it again", live.Namespace, live.Name)
	}
	if _, err := p.novaCluster.Delete(ctx, nova, live); err != nil {
		return Discovery{Err: fmt.Errorf("deleting the finished Job %s: %w", live.Name, err)}
	}
	return Discovery{State: "Job " + live.Name + " " + result + ", starting again", Replaced: true}
}

// countPhase counts the entries in a phase.
func countPhase(nodes []novav1alpha1.NovaComputeNode, phase string) int {
	n := 0
	for _, e := range nodes {
		if e.Phase == phase {
			n++
		}
	}
	return n
}
