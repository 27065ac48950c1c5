package nova

import (
	"slices"

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

// transitionEvents returns the events of a step condition that changed: a
// Warning on entering an error reason, a Normal on reaching its good
// reason. Waits record nothing, so neither a rollout in progress nor a
// steady state fills the event list.
func transitionEvents(before, after []metav1.Condition) []conditions.Event {
	var events []conditions.Event
	for _, e := range []struct {
		condType, ok string
		errors       []string
	}{
		{novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigPublishedReason, []string{novav1alpha1.ComputeConfigErrorReason}},
		{novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigPublishedReason, []string{novav1alpha1.ManageConfigErrorReason}},
		{novav1alpha1.ServiceConfigReadyCondition, novav1alpha1.ServiceConfigPublishedReason, []string{novav1alpha1.ServiceConfigErrorReason}},
		{novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.HTTPRouteAcceptedReason, []string{novav1alpha1.GatewayAPINotInstalledReason}},
		{novav1alpha1.DatabaseReadyCondition, novav1alpha1.DatabaseSyncedReason, []string{novav1alpha1.DatabaseJobFailedReason}},
		{novav1alpha1.DeploymentsReadyCondition, novav1alpha1.DeploymentsAvailableReason, []string{novav1alpha1.DeploymentErrorReason}},
	} {
		events = append(events, conditions.TransitionEvents(before, after, e.condType, e.ok,
			func(reason string) bool { return slices.Contains(e.errors, reason) })...)
	}
	return events
}
