package ovncentral

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// conditionsOf is where a pass over a central sets its conditions, stamped
// with its generation.
func conditionsOf(c *ovnv1alpha1.OVNCentral) flow.Conditions {
	return flow.Conditions{List: &c.Status.Conditions, Generation: c.Generation}
}

// transitionEvents records a Warning when a backup run fails, once per
// failed Job: the message names the Job. The central records no Normal
// events and nothing for waits, so a settled central is silent.
func transitionEvents(before, after []metav1.Condition) []conditions.Event {
	return conditions.TransitionEvents(before, after, ovnv1alpha1.BackupReadyCondition, "",
		func(reason string) bool { return reason == ovnv1alpha1.BackupJobFailedReason })
}
