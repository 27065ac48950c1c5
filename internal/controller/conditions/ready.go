// Package conditions derives the conditions every Anvil kind shares from
// the step conditions each reconciler sets, ends every pass with one status
// patch, and records the events of condition transitions.
package conditions

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// Ready derives the Ready condition of every kind from its step conditions,
// in pipeline order, so that Ready means one thing across the operator:
//  1. the first step condition that is not True makes Ready False under
//     that condition's reason, with "<type>: <message>", so that
//     `kubectl get` shows what the object waits for;
//  2. else the first that was not reported for generation (never, or only
//     for an older one) makes Ready Unknown under Reconciling, so a verdict
//     about an older spec never reads as Ready;
//  3. else Ready is True under AllReady with readyMessage.
//
// It is pure.
func Ready(steps []string, conds []metav1.Condition, generation int64, readyMessage string) metav1.Condition {
	ready := metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, Reason: anvilmeta.AllReadyReason,
		Message: readyMessage, ObservedGeneration: generation}
	for _, t := range steps {
		c := apimeta.FindStatusCondition(conds, t)
		switch {
		case c != nil && c.Status != metav1.ConditionTrue:
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, t+": "+c.Message
			return ready
		case ready.Status == metav1.ConditionTrue && c == nil:
			ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, anvilmeta.ReconcilingReason, t+" has not been reported yet"
		case ready.Status == metav1.ConditionTrue && c.ObservedGeneration < generation:
			ready.Status, ready.Reason = metav1.ConditionUnknown, anvilmeta.ReconcilingReason
			ready.Message = fmt.Sprintf("%s has not been reported for generation %d yet", t, generation)
		}
	}
	return ready
}
