// Package conditions derives the conditions every Anvil kind shares from
// the step conditions each reconciler sets, and the events of their
// transitions.
package conditions

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// Ready derives the Ready condition of every kind from its step conditions,
// in pipeline order. It is True under AllReady with readyMessage when each
// is True for generation. Otherwise it is False under NotAllReady, and the
// message names the first step condition that is not True, or that was not
// reported for this generation, with its status and reason, so that a
// pass that stopped early, or an older pass's verdict, never reads as
// Ready. It is pure.
func Ready(steps []string, conds []metav1.Condition, generation int64, readyMessage string) metav1.Condition {
	notReady := func(msg string) metav1.Condition {
		return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionFalse, Reason: anvilmeta.NotAllReadyReason,
			Message: msg, ObservedGeneration: generation}
	}
	for _, t := range steps {
		c := apimeta.FindStatusCondition(conds, t)
		switch {
		case c == nil:
			return notReady(t + " has not been reported yet")
		case c.Status != metav1.ConditionTrue:
			return notReady(fmt.Sprintf("%s is %s (%s): %s", t, c.Status, c.Reason, c.Message))
		case c.ObservedGeneration < generation:
			return notReady(fmt.Sprintf("%s has not been reported for generation %d yet", t, generation))
		}
	}
	return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, Reason: anvilmeta.AllReadyReason,
		Message: readyMessage, ObservedGeneration: generation}
}
