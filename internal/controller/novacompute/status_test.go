package novacompute

import (
	"context"
	"errors"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// TestFailingStepLeavesReadyNotTrue runs the pool's real step list with
// every step before the failing one succeeding, then derives the status
// the way patchStatus does. A failed step must leave its condition False
// under the step's reason, and Ready False under that reason, naming it, even though every
// condition was True for the generation before; observedGeneration moves
// only when the status describes the new generation.
func TestFailingStepLeavesReadyNotTrue(t *testing.T) {
	r := &Reconciler{}
	p := &pass{r: r, pool: &novav1alpha1.NovaCompute{}}
	tests := []struct {
		name           string
		step           string
		err            error
		wantReason     string
		wantGeneration int64
	}{
		{name: "Nova missing", step: novav1alpha1.NovaReadyCondition, err: func() error { _, err := p.novaWait(novav1alpha1.NovaNotFoundReason, "gone"); return err }(),
			wantReason: novav1alpha1.NovaNotFoundReason, wantGeneration: 2},
		{name: "node list forbidden", step: novav1alpha1.NodesReadyCondition,
			err:        flow.Wait(novav1alpha1.NodesReadyCondition, novav1alpha1.NodesForbiddenReason, inputRequeue, "forbidden"),
			wantReason: novav1alpha1.NodesForbiddenReason, wantGeneration: 2},
		{name: "unsafe extraConfig", step: novav1alpha1.ConfigReadyCondition,
			err:        flow.Invalid(novav1alpha1.ConfigReadyCondition, novav1alpha1.ConfigErrorReason, errors.New("extraConfig: control character")),
			wantReason: novav1alpha1.ConfigErrorReason, wantGeneration: 2},
		{name: "DaemonSet write fails", step: novav1alpha1.DaemonSetReadyCondition,
			err:        flow.Fail(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetErrorReason, errors.New("conflict")),
			wantReason: novav1alpha1.DaemonSetErrorReason, wantGeneration: 1},
		{name: "Nova API down", step: novav1alpha1.AggregatesReadyCondition,
			err: func() error {
				_, err := p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "listing aggregates", errors.New("503"))
				return err
			}(),
			wantReason: novav1alpha1.ComputeAPIErrorReason, wantGeneration: 2},
		{name: "unclassified error in Services", step: novav1alpha1.ServicesReadyCondition, err: errors.New("connection reset"),
			wantReason: anvilmeta.ReconcileErrorReason, wantGeneration: 1},
		{name: "trait creation fails", step: novav1alpha1.TraitsReadyCondition,
			err:        &flow.StepError{Condition: novav1alpha1.TraitsReadyCondition, Reason: novav1alpha1.TraitsErrorReason, Err: errors.New("409"), RequeueAfter: apiErrorRequeue},
			wantReason: novav1alpha1.TraitsErrorReason, wantGeneration: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			pool.Status.ObservedGeneration = 1
			steps := r.steps()
			for i := range steps {
				pool.Status.Conditions = append(pool.Status.Conditions,
					metav1.Condition{Type: steps[i].Condition, Status: metav1.ConditionTrue, Reason: "Was", ObservedGeneration: 1})
				cond := steps[i].Condition
				steps[i].Run = func(context.Context, *pass) (flow.Outcome, error) {
					if cond == tt.step {
						return flow.Continue, tt.err
					}
					conditionsOf(pool).Set(cond, metav1.ConditionTrue, "Done", "")
					return flow.Continue, nil
				}
			}
			_, err := flow.Run(context.Background(), conditionsOf(pool), &pass{r: r, pool: pool}, steps)
			conditions.Summarize(&pool.Status.CommonStatus, pool.Generation, err, r.summary())

			c := apimeta.FindStatusCondition(pool.Status.Conditions, tt.step)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.wantReason || c.ObservedGeneration != 2 {
				t.Fatalf("%s = %+v, want False %s at generation 2", tt.step, c, tt.wantReason)
			}
			ready := apimeta.FindStatusCondition(pool.Status.Conditions, anvilmeta.ReadyCondition)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.wantReason || !strings.HasPrefix(ready.Message, tt.step+": ") {
				t.Errorf("Ready = %+v, want False %s naming %s", ready, tt.wantReason, tt.step)
			}
			if pool.Status.ObservedGeneration != tt.wantGeneration {
				t.Errorf("observedGeneration = %d, want %d", pool.Status.ObservedGeneration, tt.wantGeneration)
			}
		})
	}
}

func TestSummaryRollsUpEveryStepButExtraConfig(t *testing.T) {
	got := (&Reconciler{}).summary().Steps
	want := []string{
		novav1alpha1.NovaReadyCondition, novav1alpha1.NodesReadyCondition, novav1alpha1.ConfigReadyCondition,
		novav1alpha1.PreflightReadyCondition, novav1alpha1.DaemonSetReadyCondition, novav1alpha1.AggregatesReadyCondition, novav1alpha1.ServicesReadyCondition,
		novav1alpha1.TraitsReadyCondition,
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Ready rolls up %v, want %v in pipeline order, without ExtraConfigHealthy", got, want)
	}
}
