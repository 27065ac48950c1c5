package novacompute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/poolpolicy"
)

// reconcilePolicy refuses a pool the operator's policy forbids before the
// pass reads or writes anything for it: no ConfigMap, no DaemonSet, no
// OpenStack call. Admission checked the same policy; a pool that bypassed
// it, or was admitted before the policy tightened, stops here. A deleting
// pool passes, so that it still drains and tears down.
//
// Both refusals are reported on DaemonSetReady, the condition of the
// privileged workload they withhold. A namespace without the opt-in is a
// wait, retried every resync, since the label that lifts it changes no
// object the pool watches; a bad image or toleration is terminal until
// the spec or the policy changes.
func (r *Reconciler) reconcilePolicy(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	if p.deleting {
		return flow.Continue, nil
	}
	if errs := r.Policy.Check(pool); len(errs) > 0 {
		return flow.Continue, flow.Invalid(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.RefusedByPolicyReason, errs.ToAggregate())
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: pool.Namespace}, ns); err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetErrorReason,
			fmt.Errorf("reading namespace %s for its %s label: %w", pool.Namespace, novav1alpha1.PrivilegedPoolsLabel, err))
	}
	if err := poolpolicy.CheckNamespace(ns); err != nil {
		return flow.Continue, flow.Wait(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.NamespaceNotOptedInReason, r.resync(), "%s", err.Error())
	}
	return flow.Continue, nil
}
