package nova

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// conditionsOf is where a pass over nova sets its conditions, stamped with
// its generation.
func conditionsOf(nova *novav1alpha1.Nova) flow.Conditions {
	return flow.Conditions{List: &nova.Status.Conditions, Generation: nova.Generation}
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
