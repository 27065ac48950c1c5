package controlplane

import (
	"context"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// checkKeystone stops a pass, before any step sends the ControlPlane's
// Keystone a password, when that Keystone is not one the operator admits:
// the webhook refuses the same spec, and this catches a ControlPlane that
// got past it (the webhook removed, or the flag narrowed since). Invalid
// input is terminal; the next spec or operator change starts a new pass.
func (r *Reconciler) checkKeystone(_ context.Context, p *pass) (flow.Outcome, error) {
	if errs := r.KeystonePolicy.CheckControlPlane(p.cp); len(errs) > 0 {
		return flow.Continue, flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.KeystoneEndpointNotAllowedReason, errs.ToAggregate())
	}
	return flow.Continue, nil
}
