package controlplane

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
)

// stepConditions are the conditions Ready summarises, in pipeline order.
var stepConditions = []string{c5c3v1alpha1.NovaReadyCondition}

// ReadyReason is Ready's reason when every step condition is True.
const ReadyReason = conditions.ReadyReason

// readyCondition derives Ready from the step conditions.
func readyCondition(conds []metav1.Condition, generation int64) metav1.Condition {
	return conditions.Ready(stepConditions, conds, generation, "every service is ready")
}

func setReady(cp *c5c3v1alpha1.ControlPlane) {
	apimeta.SetStatusCondition(&cp.Status.Conditions, readyCondition(cp.Status.Conditions, cp.Generation))
}

func setNovaReady(cp *c5c3v1alpha1.ControlPlane, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&cp.Status.Conditions, metav1.Condition{
		Type: c5c3v1alpha1.NovaReadyCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: cp.Generation,
	})
}

// errorReasons are the NovaReady reasons that deserve a Warning event.
var errorReasons = map[string]bool{
	c5c3v1alpha1.NovaComputeConfigErrorReason:   true,
	c5c3v1alpha1.NovaRemoteMessagingErrorReason: true,
	c5c3v1alpha1.NovaProjectionRejectedReason:   true,
	c5c3v1alpha1.NovaErrorReason:                true,
}

// transitionEvents returns the events of a NovaReady that changed: a
// Warning on entering an error reason, a Normal on becoming ready.
func transitionEvents(before, after []metav1.Condition) []conditions.Event {
	return conditions.TransitionEvents(before, after, c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaReadyReason,
		func(reason string) bool { return errorReasons[reason] })
}
