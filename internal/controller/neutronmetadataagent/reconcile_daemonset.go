package neutronmetadataagent

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/scriptfiles"
	"github.com/anvil/anvil/internal/controller/workload"
)

// reconcileDaemonSet writes the scripts and the agent's DaemonSet, mirrors
// its counters into the status before judging them, and stamps the
// installed image once every selected node runs a ready, current pod. A
// rollout in progress is polled without failing the pass.
func (r *Reconciler) reconcileDaemonSet(ctx context.Context, p *pass) (flow.Outcome, error) {
	a := p.agent
	scripts := BuildScripts(a)
	if err := p.children.Apply(ctx, a, scripts); err != nil {
		return flow.Continue, workload.WriteError(neutronv1alpha1.DaemonSetReadyCondition, neutronv1alpha1.DaemonSetErrorReason, err)
	}
	ds := BuildDaemonSet(a, DaemonSetInput{
		Chassis:       p.chassis,
		ConfigMapName: p.configMap,
		ConfigHash:    p.configHash + "-" + scriptfiles.Hash(scripts.Data)[:8],
		SecretHash:    p.secretHash,
	})
	if err := p.children.Apply(ctx, a, ds); err != nil {
		return flow.Continue, workload.WriteError(neutronv1alpha1.DaemonSetReadyCondition, neutronv1alpha1.DaemonSetErrorReason, err)
	}
	a.Status.DesiredNumberScheduled, a.Status.NumberReady = ds.Status.DesiredNumberScheduled, ds.Status.NumberReady
	if done, why := workload.DaemonSetRolledOut(ds); !done {
		conditionsOf(a).Set(neutronv1alpha1.DaemonSetReadyCondition, metav1.ConditionFalse, neutronv1alpha1.DaemonSetProgressingReason, why)
		return flow.Requeue(daemonSetPoll), nil
	}
	a.Status.InstalledImage = a.ResolvedImage()
	conditionsOf(a).Set(neutronv1alpha1.DaemonSetReadyCondition, metav1.ConditionTrue, neutronv1alpha1.DaemonSetReadyReason,
		fmt.Sprintf("the metadata agent runs on all %d selected nodes", ds.Status.DesiredNumberScheduled))
	return flow.Continue, nil
}
