package ovnchassis

import (
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// ChassisMaintenanceJobFailedEvent is the reason of the Warning recorded
// when a maintenance Job fails.
const ChassisMaintenanceJobFailedEvent = "ChassisMaintenanceJobFailed"

// conditionsOf is where a pass over a chassis sets its conditions.
func conditionsOf(c *ovnv1alpha1.OVNChassis) flow.Conditions {
	return flow.Conditions{List: &c.Status.Conditions, Generation: c.Generation}
}

// transitionEvents records one Warning when a maintenance Job fails; the
// message names the Job, so each failed Job is reported once. Nothing else
// records events: conditions carry the rest.
func transitionEvents(before, after []metav1.Condition) []conditions.Event {
	now := apimeta.FindStatusCondition(after, ovnv1alpha1.MaintenanceReadyCondition)
	if now == nil || now.Reason != ovnv1alpha1.MaintenanceJobFailedReason {
		return nil
	}
	if prev := apimeta.FindStatusCondition(before, ovnv1alpha1.MaintenanceReadyCondition); prev != nil &&
		prev.Reason == now.Reason && prev.Message == now.Message {
		return nil
	}
	return []conditions.Event{{Type: corev1.EventTypeWarning, Reason: ChassisMaintenanceJobFailedEvent, Message: now.Message}}
}
