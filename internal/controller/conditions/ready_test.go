package conditions

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

func TestReady(t *testing.T) {
	steps := []string{"A", "B"}
	c := func(t string, s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: "m-" + t, ObservedGeneration: gen}
	}
	tests := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "nothing yet", wantStatus: metav1.ConditionUnknown, wantReason: anvilmeta.ReconcilingReason, wantMsg: "A has not been reported yet"},
		{name: "second missing", conds: []metav1.Condition{c("A", metav1.ConditionTrue, "Ok", 7)},
			wantStatus: metav1.ConditionUnknown, wantReason: anvilmeta.ReconcilingReason, wantMsg: "B has not been reported yet"},
		{name: "first failing wins", conds: []metav1.Condition{c("A", metav1.ConditionFalse, "Wait", 7), c("B", metav1.ConditionFalse, "Err", 7)},
			wantStatus: metav1.ConditionFalse, wantReason: "Wait", wantMsg: "A: m-A"},
		{name: "a failure beats an earlier unreported step", conds: []metav1.Condition{c("B", metav1.ConditionFalse, "Err", 7)},
			wantStatus: metav1.ConditionFalse, wantReason: "Err", wantMsg: "B: m-B"},
		{name: "unknown is not ready", conds: []metav1.Condition{c("A", metav1.ConditionUnknown, "Hmm", 7), c("B", metav1.ConditionTrue, "Ok", 7)},
			wantStatus: metav1.ConditionFalse, wantReason: "Hmm", wantMsg: "A: m-A"},
		{name: "a True verdict of an older generation is not ready", conds: []metav1.Condition{c("A", metav1.ConditionTrue, "Ok", 7), c("B", metav1.ConditionTrue, "Ok", 6)},
			wantStatus: metav1.ConditionUnknown, wantReason: anvilmeta.ReconcilingReason, wantMsg: "B has not been reported for generation 7 yet"},
		{name: "all true", conds: []metav1.Condition{c("A", metav1.ConditionTrue, "Ok", 7), c("B", metav1.ConditionTrue, "Ok", 7)},
			wantStatus: metav1.ConditionTrue, wantReason: anvilmeta.AllReadyReason, wantMsg: "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ready(steps, tt.conds, 7, "done")
			if got.Type != anvilmeta.ReadyCondition || got.Status != tt.wantStatus || got.Reason != tt.wantReason || got.ObservedGeneration != 7 {
				t.Errorf("Ready = %+v", got)
			}
			if got.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q", got.Message, tt.wantMsg)
			}
		})
	}
}
