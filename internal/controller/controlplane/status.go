package controlplane

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// conditionsOf is where a pass over cp sets its conditions, stamped with
// its generation.
func conditionsOf(cp *c5c3v1alpha1.ControlPlane) flow.Conditions {
	return flow.Conditions{List: &cp.Status.Conditions, Generation: cp.Generation}
}

// setNovaReady reports NovaReady True; a step that fails reports it False
// through its error.
func setNovaReady(cp *c5c3v1alpha1.ControlPlane, reason, message string) {
	conditionsOf(cp).Set(c5c3v1alpha1.NovaReadyCondition, metav1.ConditionTrue, reason, message)
}

// errorReasons are the NovaReady reasons that deserve a Warning event.
var errorReasons = map[string]bool{
	c5c3v1alpha1.NovaComputeConfigErrorReason:   true,
	c5c3v1alpha1.NovaRemoteMessagingErrorReason: true,
	c5c3v1alpha1.NovaProjectionRejectedReason:   true,
	c5c3v1alpha1.NovaErrorReason:                true,
	c5c3v1alpha1.HypervisorOperatorErrorReason:  true,
	c5c3v1alpha1.ComputeCredentialsErrorReason:  true,
	c5c3v1alpha1.BrokerUserErrorReason:          true,
}

// transitionEvents returns the events of a NovaReady that changed: a
// Warning on entering an error reason, a Normal on becoming ready; and a
// Warning when ComputeCatalogReady enters CatalogError. The catalog's
// Normal events are recorded by the step, which knows what it wrote.
func transitionEvents(before, after []metav1.Condition) []conditions.Event {
	nova := conditions.TransitionEvents(before, after, c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaReadyReason,
		func(reason string) bool { return errorReasons[reason] })
	catalog := conditions.TransitionEvents(before, after, c5c3v1alpha1.ComputeCatalogReadyCondition, "",
		func(reason string) bool { return reason == c5c3v1alpha1.CatalogErrorReason })
	return append(nova, catalog...)
}
