package neutronmetadataagent

import (
	"context"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// patchStatus ends every pass: the shared rollup derives Ready and writes
// what changed. No condition transition records an event: the agent's
// waits and failures are reported by its conditions only.
func (r *Reconciler) patchStatus(ctx context.Context, before, a *neutronv1alpha1.NeutronMetadataAgent, passErr error) error {
	return conditions.PatchStatus(ctx, r.Client, r.Recorder, before, a, &before.Status.CommonStatus, &a.Status.CommonStatus, passErr, r.summary())
}

// summary is how an agent's Ready is derived.
func (r *Reconciler) summary() conditions.Summary {
	return conditions.Summary{
		Steps:        flow.StepConditions(r.steps()),
		ReadyMessage: "every node of the chassis runs a ready metadata agent",
	}
}

// conditionsOf is where a pass over an agent sets its conditions.
func conditionsOf(a *neutronv1alpha1.NeutronMetadataAgent) flow.Conditions {
	return flow.Conditions{List: &a.Status.Conditions, Generation: a.Generation}
}
