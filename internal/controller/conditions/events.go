package conditions

import (
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is one event to record for a condition transition.
type Event struct {
	Type, Reason, Message string
}

// TransitionEvents returns the events for a condition that changed in this
// pass: a Warning when it enters a reason isError accepts (or its message
// changes there), a Normal when it first reaches okReason. A condition that
// did not change records nothing, so a steady state is silent.
func TransitionEvents(before, after []metav1.Condition, condType, okReason string, isError func(reason string) bool) []Event {
	now := apimeta.FindStatusCondition(after, condType)
	if now == nil {
		return nil
	}
	prev := apimeta.FindStatusCondition(before, condType)
	if prev != nil && prev.Reason == now.Reason && prev.Message == now.Message {
		return nil
	}
	switch {
	case isError(now.Reason):
		return []Event{{corev1.EventTypeWarning, now.Reason, now.Message}}
	case now.Reason == okReason && (prev == nil || prev.Reason != okReason):
		return []Event{{corev1.EventTypeNormal, now.Reason, now.Message}}
	}
	return nil
}
