package novacompute

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/controller/flow"
)

// schedulableResource is what one allocation candidate must offer: the
// least any server asks for.
const schedulableResource = "VCPU:1"

// schedulableHurry is how long after its registration a node Placement
// does not offer yet is looked at again in shortRequeue rather than at the
// pool's resync: long enough for any onboarding, short enough that a node
// Placement never offers costs the settled cadence.
const schedulableHurry = 10 * time.Minute

// reconcileSchedulable observes, once per node, the time from its
// nova-compute container's start until Placement offers the node as an
// allocation candidate in its zone aggregate (see
// docs/design/time-to-schedulable.md). Placement is asked only about nodes
// that passed every cheaper check (SchedulableCandidate) and were not
// observed yet, so a settled pool makes no request here. It is a
// measurement: a failed request is logged at debug level and asked again
// on the next pass, and no condition changes.
func (r *Reconciler) reconcileSchedulable(ctx context.Context, p *pass) (flow.Outcome, error) {
	since := r.onboarding.started(r.now())
	var waiting []int
	for i, e := range p.pool.Status.Nodes {
		agg, ok := p.aggregates[e.Zone]
		if ok && !r.onboarding.schedulableObserved(p.pool, e) && SchedulableCandidate(e, &agg, since) {
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 {
		return flow.Continue, nil
	}
	log := ctrl.LoggerFrom(ctx)
	cloud, ids, err := r.providerIDs(ctx, p)
	if err != nil {
		log.V(1).Info("not asking Placement whether new nodes are schedulable", "error", err.Error())
		return flow.Requeue(shortRequeue), nil
	}
	var pods []corev1.Pod
	podsRead := false
	out := flow.Continue
	for _, i := range waiting {
		e := p.pool.Status.Nodes[i]
		var offered []string
		if id := ids[e.Name]; id != "" {
			// in_tree keeps the answer to the node's own provider.
			offered, err = cloud.AllocationCandidates(ctx, schedulableResource, p.aggregates[e.Zone].UUID, id)
		}
		if err != nil || len(offered) == 0 {
			if err != nil {
				log.V(1).Info("asking Placement whether a node is schedulable failed", "node", e.Name, "error", err.Error())
			}
			// Placement follows the aggregate within seconds, and the
			// pass would not look again before its resync.
			if r.now().Sub(e.ServiceRegisteredAt.Time) < schedulableHurry {
				out = flow.Merge(out, flow.Requeue(shortRequeue))
			}
			continue
		}
		if !podsRead {
			pods, podsRead = r.poolPods(ctx, p), true
		}
		start, ok := ComputeStarted(pods, e.Name)
		if !ok {
			// No pod reports the container: the registration, as the pool
			// first saw it, is the next best start.
			start = e.ServiceRegisteredAt.Time
		}
		r.onboarding.schedulable(p.pool, e, start, r.now())
	}
	return out, nil
}

// providerIDs maps hosts to their resource providers' UUIDs.
func (r *Reconciler) providerIDs(ctx context.Context, p *pass) (Cloud, map[string]string, error) {
	cloud, err := p.openCloud(ctx)
	if err != nil {
		return nil, nil, err
	}
	hvs, err := r.listings.hypervisors.get(ctx, p.listingKey(), p.started, cloud.ListHypervisors)
	if err != nil {
		return nil, nil, err
	}
	return cloud, HypervisorIDs(hvs), nil
}

// poolPods lists the pool's pods on its cluster; a failed listing returns
// none, and the observation falls back to the registration time.
func (r *Reconciler) poolPods(ctx context.Context, p *pass) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := p.reader().List(ctx, pods, client.InNamespace(p.pool.Namespace), client.MatchingLabels(PodLabels(p.pool.Name))); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("listing the pool's pods failed; timing from the registration", "error", fmt.Sprint(err))
		return nil
	}
	return pods.Items
}
