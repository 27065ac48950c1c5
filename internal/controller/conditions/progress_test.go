package conditions

import (
	"errors"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/flow"
)

func TestProgress(t *testing.T) {
	ready := metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, Reason: anvilmeta.AllReadyReason, ObservedGeneration: 3}
	waiting := metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "NovaNotFound", Message: "NovaReady: no Nova", ObservedGeneration: 3}
	step := metav1.Condition{Type: "NovaReady", Status: metav1.ConditionFalse, Reason: "Refused", Message: "spec.image: not allowed"}
	stale := []metav1.Condition{
		{Type: anvilmeta.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: "Old"},
		{Type: anvilmeta.StalledCondition, Status: metav1.ConditionTrue, Reason: "Old"},
	}
	optIn := flow.WaitOnUser("NovaReady", anvilmeta.NamespaceNotOptedInReason, 1, "namespace not opted in")
	tests := []struct {
		name           string
		conds          []metav1.Condition
		ready          metav1.Condition
		err            error
		reconciling    string // reason, "" for absent
		stalled, stMsg string
	}{
		{name: "settled carries neither", conds: stale, ready: ready},
		{name: "a wait reconciles under Ready's reason", conds: stale, ready: waiting,
			err: flow.Wait("NovaReady", "NovaNotFound", 1, "no Nova"), reconciling: "NovaNotFound"},
		{name: "a transient error reconciles", ready: waiting, err: errors.New("apiserver down"), reconciling: "NovaNotFound"},
		{name: "ready False without an error still reconciles", ready: waiting, reconciling: "NovaNotFound"},
		{name: "invalid input stalls with the step's message", conds: []metav1.Condition{step, stale[0]}, ready: waiting,
			err: flow.Invalid("NovaReady", "Refused", errors.New("spec.image: not allowed")), stalled: "Refused", stMsg: "NovaReady: spec.image: not allowed"},
		{name: "a wait only a person can end stalls", ready: waiting, err: optIn,
			stalled: anvilmeta.NamespaceNotOptedInReason, stMsg: "NovaReady: namespace not opted in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tt.conds...)
			Progress(&conds, tt.ready, tt.err)
			check := func(typ, wantReason, wantMsg string) {
				c := apimeta.FindStatusCondition(conds, typ)
				switch {
				case wantReason == "" && c != nil:
					t.Errorf("%s = %+v, want it absent", typ, c)
				case wantReason != "" && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != wantReason || c.ObservedGeneration != 3):
					t.Errorf("%s = %+v, want True under %s", typ, c, wantReason)
				case wantMsg != "" && c.Message != wantMsg:
					t.Errorf("%s message = %q, want %q", typ, c.Message, wantMsg)
				}
			}
			check(anvilmeta.ReconcilingCondition, tt.reconciling, "")
			check(anvilmeta.StalledCondition, tt.stalled, tt.stMsg)
		})
	}
}
