package nova

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
)

// stepConditions are the conditions Ready summarises, in pipeline order.
// ManageConfigReady is True when no database is declared, so a Nova
// without databases is Ready as before.
var stepConditions = []string{novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ManageConfigReadyCondition}

// ReadyReason is Ready's reason when every step condition is True.
const ReadyReason = conditions.ReadyReason

// readyCondition derives Ready from the step conditions.
func readyCondition(conds []metav1.Condition, generation int64) metav1.Condition {
	return conditions.Ready(stepConditions, conds, generation, "the compute contract and the nova-manage configuration are current")
}

func setReady(nova *novav1alpha1.Nova) {
	apimeta.SetStatusCondition(&nova.Status.Conditions, readyCondition(nova.Status.Conditions, nova.Generation))
}

// setComputeConfigReady sets ComputeConfigReady, stamped with the Nova's
// generation.
func setComputeConfigReady(nova *novav1alpha1.Nova, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&nova.Status.Conditions, metav1.Condition{
		Type: novav1alpha1.ComputeConfigReadyCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: nova.Generation,
	})
}

// setManageConfigReady sets ManageConfigReady, stamped with the Nova's
// generation.
func setManageConfigReady(nova *novav1alpha1.Nova, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&nova.Status.Conditions, metav1.Condition{
		Type: novav1alpha1.ManageConfigReadyCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: nova.Generation,
	})
}

// setUnavailable reports an unresolvable target cluster on the first gate.
func setUnavailable(nova *novav1alpha1.Nova, err error) {
	setComputeConfigReady(nova, metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, err.Error())
}

// transitionEvents returns the events of a ComputeConfigReady or
// ManageConfigReady that changed: a Warning on entering its error reason, a
// Normal on publishing. Waiting and NotRequired record nothing.
func transitionEvents(before, after []metav1.Condition) []conditions.Event {
	events := conditions.TransitionEvents(before, after, novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigPublishedReason,
		func(reason string) bool { return reason == novav1alpha1.ComputeConfigErrorReason })
	return append(events, conditions.TransitionEvents(before, after, novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigPublishedReason,
		func(reason string) bool { return reason == novav1alpha1.ManageConfigErrorReason })...)
}
