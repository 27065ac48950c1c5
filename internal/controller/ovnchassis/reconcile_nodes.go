package ovnchassis

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/scriptfiles"
	"github.com/anvil/anvil/internal/controller/workload"
)

// reconcileNodes writes the scripts and one entry per node. Nodes are
// listed with the selector applied by the apiserver, live, so a relabelled
// node is seen on the pass its event brings. With no node selected the
// entries and DaemonSets are still written, empty, and the pass goes on.
func (r *Reconciler) reconcileNodes(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.chassis
	scripts := BuildScripts(c)
	if err := p.children.Apply(ctx, c, scripts); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.NodesReadyCondition, ovnv1alpha1.NodesErrorReason, err)
	}
	p.scriptsHash = scriptfiles.Hash(scripts.Data)
	// The evacuate Job runs on the management cluster and reads its script
	// there.
	if p.children.Remote() {
		if err := childwriter.Local(r.Client, r.Scheme).Apply(ctx, c, BuildScripts(c)); err != nil {
			return flow.Continue, workload.WriteError(ovnv1alpha1.NodesReadyCondition, ovnv1alpha1.NodesErrorReason, err)
		}
	}
	nodes := &corev1.NodeList{}
	if err := p.live.List(ctx, nodes, client.MatchingLabels(c.Spec.NodeSelector)); err != nil {
		return flow.Continue, flow.Fail(ovnv1alpha1.NodesReadyCondition, ovnv1alpha1.NodeListErrorReason, fmt.Errorf("listing nodes: %w", err))
	}
	selected := make([]NodeInput, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		if n.DeletionTimestamp.IsZero() {
			selected = append(selected, NodeInput{Name: n.Name, Labels: n.Labels})
		}
	}
	live := &corev1.ConfigMap{}
	if err := p.live.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: NodesName(c)}, live); err != nil && !apierrors.IsNotFound(err) {
		return flow.Continue, fmt.Errorf("reading the nodes ConfigMap: %w", err)
	}
	p.entries = DecideNodes(c, selected, live.Data, newSystemID)
	if err := p.children.Apply(ctx, c, BuildNodes(c, p.entries)); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.NodesReadyCondition, ovnv1alpha1.NodesErrorReason, err)
	}
	leaving := len(p.entries) - len(selected)
	if len(selected) == 0 {
		conditionsOf(c).Set(ovnv1alpha1.NodesReadyCondition, metav1.ConditionFalse, ovnv1alpha1.NoMatchingNodesReason,
			"no node matches spec.nodeSelector ("+strconv.Itoa(leaving)+" leaving)")
		return flow.Continue, nil
	}
	conditionsOf(c).Set(ovnv1alpha1.NodesReadyCondition, metav1.ConditionTrue, ovnv1alpha1.NodesRenderedReason,
		"Rendered "+strconv.Itoa(len(p.entries))+" node entries ("+strconv.Itoa(leaving)+" leaving)")
	return flow.Continue, nil
}
