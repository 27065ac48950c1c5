package conditions

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/flow"
)

// Progress sets the two kstatus conditions from the pass's Ready and its
// error, so that GitOps health checks tell slow progress from a dead end:
//   - a pass that stopped on input no retry can fix sets Stalled True with
//     the failed step's reason and condition message, and drops
//     Reconciling;
//   - otherwise, while Ready is not True, Reconciling is True with Ready's
//     reason and message, and Stalled is dropped;
//   - a Ready object carries neither, so a settled object's status does not
//     change and its pass writes nothing.
//
// It is pure.
func Progress(conds *[]metav1.Condition, ready metav1.Condition, passErr error) {
	if cond, reason, ok := flow.Stalled(passErr); ok {
		msg := cond + ": " + passErr.Error()
		if c := apimeta.FindStatusCondition(*conds, cond); c != nil {
			msg = cond + ": " + c.Message
		}
		apimeta.SetStatusCondition(conds, metav1.Condition{Type: anvilmeta.StalledCondition, Status: metav1.ConditionTrue,
			Reason: reason, Message: msg, ObservedGeneration: ready.ObservedGeneration})
		apimeta.RemoveStatusCondition(conds, anvilmeta.ReconcilingCondition)
		return
	}
	apimeta.RemoveStatusCondition(conds, anvilmeta.StalledCondition)
	if ready.Status == metav1.ConditionTrue {
		apimeta.RemoveStatusCondition(conds, anvilmeta.ReconcilingCondition)
		return
	}
	apimeta.SetStatusCondition(conds, metav1.Condition{Type: anvilmeta.ReconcilingCondition, Status: metav1.ConditionTrue,
		Reason: ready.Reason, Message: ready.Message, ObservedGeneration: ready.ObservedGeneration})
}
