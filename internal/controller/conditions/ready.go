// Package conditions derives the conditions every Anvil kind shares from
// the step conditions each reconciler sets.
package conditions

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// ReadyReason is Ready's reason when every step condition is True.
const ReadyReason = "AllReady"

// Ready derives the Ready condition from the step conditions, in pipeline
// order: True with readyMessage when all are True; Unknown while one has
// not been reported; otherwise False with the reason and message of the
// first that is not True, so that `kubectl get` shows what the object
// waits for.
func Ready(steps []string, conds []metav1.Condition, generation int64, readyMessage string) metav1.Condition {
	for _, t := range steps {
		c := apimeta.FindStatusCondition(conds, t)
		if c == nil {
			return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionUnknown, Reason: anvilmeta.ReconcilingReason,
				Message: t + " has not been reported yet", ObservedGeneration: generation}
		}
		if c.Status != metav1.ConditionTrue {
			return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionFalse, Reason: c.Reason,
				Message: t + ": " + c.Message, ObservedGeneration: generation}
		}
	}
	return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, Reason: ReadyReason,
		Message: readyMessage, ObservedGeneration: generation}
}
