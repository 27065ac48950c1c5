package nova

import (
	"context"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/keystonepolicy"
)

// reconcileKeystonePolicy refuses a Nova whose Keystone URLs name a host
// the operator does not admit, before anything is published: every
// contract and {nova}-config carries the service password for those
// URLs, and the pools authenticate there. Admission refuses such a Nova
// too; this catches one that bypassed it, or was admitted under a wider
// policy.
func (r *Reconciler) reconcileKeystonePolicy(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp, err := keystonepolicy.ControlPlaneOf(ctx, r.Client, p.nova)
	if err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigErrorReason, err)
	}
	if errs := r.Keystone.Check(p.nova, cp); len(errs) > 0 {
		return flow.Continue, flow.Invalid(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.KeystoneEndpointNotAllowedReason, errs.ToAggregate())
	}
	return flow.Continue, nil
}
