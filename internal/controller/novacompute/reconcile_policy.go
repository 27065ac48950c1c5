package novacompute

import (
	"context"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// reconcilePolicy refuses a pool the operator's workload policy forbids
// before the pass reads or writes anything for it: no ConfigMap, no
// DaemonSet, no OpenStack call. A deleting pool passes, so that it still
// drains and tears down. Both refusals are reported on DaemonSetReady,
// the condition of the privileged workload they withhold.
func (r *Reconciler) reconcilePolicy(ctx context.Context, p *pass) (flow.Outcome, error) {
	if p.deleting {
		return flow.Continue, nil
	}
	return flow.Continue, flow.EnforceWorkloadPolicy(ctx, r.APIReader, flow.PolicyCheck{
		Namespace:   p.pool.Namespace,
		Refusals:    r.Policy.CheckNovaCompute(p.pool),
		Condition:   novav1alpha1.DaemonSetReadyCondition,
		ErrorReason: novav1alpha1.DaemonSetErrorReason,
		Recheck:     r.resync(),
	})
}
