package ovnchassis

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/workload"
)

// reconcileOVS runs Open vSwitch. A rollout in progress is reported and
// polled; ovn-controller waits for it.
func (r *Reconciler) reconcileOVS(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.chassis
	ds := BuildOVSDaemonSet(c, p.scriptsHash)
	if err := p.children.Apply(ctx, c, ds); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.OVSReadyCondition, ovnv1alpha1.DaemonSetErrorReason, err)
	}
	if done, why := workload.DaemonSetRolledOut(ds); !done {
		conditionsOf(c).Set(ovnv1alpha1.OVSReadyCondition, metav1.ConditionFalse, ovnv1alpha1.DaemonSetProgressingReason, why)
		return flow.Requeue(daemonSetPoll), nil
	}
	p.ovsReady = true
	conditionsOf(c).Set(ovnv1alpha1.OVSReadyCondition, metav1.ConditionTrue, ovnv1alpha1.DaemonSetReadyReason,
		fmt.Sprintf("Open vSwitch runs on all %d selected nodes", ds.Status.DesiredNumberScheduled))
	return flow.Continue, nil
}

// reconcileController runs ovn-controller once every OVS pod is ready, so
// no controller starts against a switch that is not there, and stamps the
// installed image once it runs everywhere.
func (r *Reconciler) reconcileController(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.chassis
	if !p.ovsReady {
		conditionsOf(c).Set(ovnv1alpha1.ControllerReadyCondition, metav1.ConditionFalse, ovnv1alpha1.DaemonSetProgressingReason,
			"waiting for Open vSwitch on every selected node")
		return flow.Requeue(daemonSetPoll), nil
	}
	ds := BuildControllerDaemonSet(c, p.addrs.Remote, p.scriptsHash)
	if err := p.children.Apply(ctx, c, ds); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.ControllerReadyCondition, ovnv1alpha1.DaemonSetErrorReason, err)
	}
	c.Status.DesiredNumberScheduled, c.Status.NumberReady = ds.Status.DesiredNumberScheduled, ds.Status.NumberReady
	if done, why := workload.DaemonSetRolledOut(ds); !done {
		conditionsOf(c).Set(ovnv1alpha1.ControllerReadyCondition, metav1.ConditionFalse, ovnv1alpha1.DaemonSetProgressingReason, why)
		return flow.Requeue(daemonSetPoll), nil
	}
	c.Status.InstalledImage = c.ResolvedImage()
	conditionsOf(c).Set(ovnv1alpha1.ControllerReadyCondition, metav1.ConditionTrue, ovnv1alpha1.DaemonSetReadyReason,
		fmt.Sprintf("ovn-controller runs on all %d selected nodes, connected to %s", ds.Status.DesiredNumberScheduled, p.addrs.Remote))
	return flow.Continue, nil
}
