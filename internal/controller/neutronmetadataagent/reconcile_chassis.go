package neutronmetadataagent

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// reconcileChassis reads the chassis and its central from the management
// cluster, in the agent's namespace, and lets DecideChassis judge them. A
// verdict that waits for a change of the chassis, the central or the agent
// is terminal; the watches on the chassis and central bring the change.
func (r *Reconciler) reconcileChassis(ctx context.Context, p *pass) (flow.Outcome, error) {
	a := p.agent
	chassis := &ovnv1alpha1.OVNChassis{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.ChassisRef.Name}, chassis); err != nil {
		if !apierrors.IsNotFound(err) {
			return flow.Continue, flow.Fail(neutronv1alpha1.ChassisReadyCondition, neutronv1alpha1.ChassisReadErrorReason,
				fmt.Errorf("reading OVNChassis %s: %w", a.Spec.ChassisRef.Name, err))
		}
		chassis = nil
	}
	var central *ovnv1alpha1.OVNCentral
	var centralErr error
	if chassis != nil {
		central = &ovnv1alpha1.OVNCentral{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: chassis.Spec.CentralRef.Name}, central); err != nil {
			central, centralErr = nil, client.IgnoreNotFound(err)
		}
	}
	v := DecideChassis(a, chassis, central)
	switch {
	case v.Reason == neutronv1alpha1.CentralNotFoundReason && centralErr != nil:
		// The verdict reached the central, which could not be read: that
		// is a failure to retry, not a central that does not exist.
		return flow.Continue, flow.Fail(neutronv1alpha1.ChassisReadyCondition, neutronv1alpha1.CentralReadErrorReason,
			fmt.Errorf("reading OVNCentral %s: %w", chassis.Spec.CentralRef.Name, centralErr))
	case v.Resolved != nil:
	case v.Requeue > 0:
		return flow.Continue, flow.Wait(neutronv1alpha1.ChassisReadyCondition, v.Reason, v.Requeue, "%s", v.Message)
	default:
		return flow.Continue, flow.Invalid(neutronv1alpha1.ChassisReadyCondition, v.Reason, errors.New(v.Message))
	}
	p.chassis = *v.Resolved
	p.centralName = chassis.Spec.CentralRef.Name
	conditionsOf(a).Set(neutronv1alpha1.ChassisReadyCondition, metav1.ConditionTrue, v.Reason, v.Message)
	return flow.Continue, nil
}
