package controlplane

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// ovnPoll looks at a central that is not ready again; the central's watch
// usually comes first.
const ovnPoll = 15 * time.Second

// reconcileOVN reports the OVNCentral Neutron uses under OVNReady. It only
// reads: the ControlPlane never creates, changes or deletes a central. It
// runs last and never stops the pass, because Nova does not need OVN to
// come up.
func (r *Reconciler) reconcileOVN(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp := p.cp
	set := func(status metav1.ConditionStatus, reason, msg string) {
		conditionsOf(cp).Set(c5c3v1alpha1.OVNReadyCondition, status, reason, msg)
	}
	n := cp.Spec.Services.Neutron
	if n == nil || n.OVN == nil {
		set(metav1.ConditionTrue, c5c3v1alpha1.OVNNotManagedReason, "services.neutron.ovn is not set")
		return flow.Continue, nil
	}
	ref := n.OVN.CentralRef
	if ns := ref.ResolvedNamespace(cp.Namespace); ns != cp.Namespace {
		set(metav1.ConditionFalse, c5c3v1alpha1.OVNCentralNamespaceForbiddenReason,
			fmt.Sprintf("services.neutron.ovn.centralRef.namespace %s is not the ControlPlane's namespace %s", ns, cp.Namespace))
		return flow.Continue, nil
	}
	central := &ovnv1alpha1.OVNCentral{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: ref.Name}, central)
	switch {
	case apierrors.IsNotFound(err):
		central = nil
	case apimeta.IsNoMatchError(err):
		set(metav1.ConditionFalse, c5c3v1alpha1.OVNCentralReadErrorReason, "the OVNCentral kind is not served; install Anvil's CRDs")
		return flow.Requeue(ovnPoll), nil
	case err != nil:
		set(metav1.ConditionFalse, c5c3v1alpha1.OVNCentralReadErrorReason, "reading OVNCentral "+ref.Name+" failed")
		return flow.Continue, fmt.Errorf("reading OVNCentral %s: %w", ref.Name, err)
	}
	v := DecideOVN(central)
	set(v.Status, v.Reason, v.Message)
	if v.Status != metav1.ConditionTrue {
		return flow.Requeue(ovnPoll), nil
	}
	return flow.Continue, nil
}
