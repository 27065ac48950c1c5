package flow

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b Outcome
		want Outcome
	}{
		{name: "both continue", a: Continue, b: Continue, want: Continue},
		{name: "earliest requeue wins", a: Requeue(10 * time.Second), b: Requeue(time.Second), want: Requeue(time.Second)},
		{name: "a requeue survives a continue", a: Continue, b: Requeue(time.Second), want: Requeue(time.Second)},
		{name: "a continue does not clear a requeue", a: Requeue(time.Second), b: Continue, want: Requeue(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Merge(tt.a, tt.b); got != tt.want {
				t.Errorf("Merge = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResult(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name         string
		out          Outcome
		err          error
		wantRequeue  time.Duration
		wantErr      bool
		wantTerminal bool
	}{
		{name: "done", out: Continue},
		{name: "timed requeue", out: Requeue(5 * time.Second), wantRequeue: 5 * time.Second},
		{name: "a wait is no error", err: Wait("C", "R", 7*time.Second, "x"), wantRequeue: 7 * time.Second},
		{name: "an earlier requeue beats the wait", out: Requeue(time.Second), err: Wait("C", "R", 7*time.Second, "x"), wantRequeue: time.Second},
		{name: "invalid input is terminal", err: Invalid("C", "R", boom), wantErr: true, wantTerminal: true},
		{name: "a failure backs off", err: Fail("C", "R", boom), wantErr: true},
		{name: "an unclassified error backs off", out: Requeue(time.Second), err: boom, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Result(tt.out, tt.err)
			if res.RequeueAfter != tt.wantRequeue || (err != nil) != tt.wantErr {
				t.Fatalf("Result = %+v, %v", res, err)
			}
			if tt.wantErr && !errors.Is(err, tt.err) {
				t.Errorf("the error lost its cause: %v", err)
			}
			var se *StepError
			if got := errors.As(err, &se) && se.Terminal; got != tt.wantTerminal {
				t.Errorf("terminal = %v, want %v", got, tt.wantTerminal)
			}
		})
	}
}

func TestJoinPatchError(t *testing.T) {
	stepErr, patchErr := errors.New("step"), errors.New("patch")
	conflict := fmt.Errorf("patching status: %w", apierrors.NewConflict(schema.GroupResource{Resource: "novas"}, "n", errors.New("changed")))
	tests := []struct {
		name        string
		res         ctrl.Result
		retErr      error
		patchErr    error
		wantRequeue time.Duration
		wantErrs    []error
	}{
		{name: "a clean patch keeps the requeue", res: ctrl.Result{RequeueAfter: time.Minute}, wantRequeue: time.Minute},
		{name: "a clean patch keeps the step's error", retErr: stepErr, wantErrs: []error{stepErr}},
		{name: "a failed patch drops the requeue", res: ctrl.Result{RequeueAfter: time.Minute}, patchErr: patchErr, wantErrs: []error{patchErr}},
		{name: "a failed patch joins the step's error", retErr: stepErr, patchErr: patchErr, wantErrs: []error{stepErr, patchErr}},
		{name: "a conflict requeues soon without an error", patchErr: conflict, wantRequeue: ConflictRequeue},
		{name: "a conflict keeps a sooner requeue", res: ctrl.Result{RequeueAfter: time.Millisecond}, patchErr: conflict, wantRequeue: time.Millisecond},
		{name: "a conflict shortens a later requeue", res: ctrl.Result{RequeueAfter: time.Minute}, patchErr: conflict, wantRequeue: ConflictRequeue},
		{name: "a conflict after a step's error keeps the error", retErr: stepErr, patchErr: conflict, wantErrs: []error{stepErr, conflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, retErr := tt.res, tt.retErr
			JoinPatchError(&res, &retErr, tt.patchErr)
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tt.wantRequeue)
			}
			if (retErr != nil) != (len(tt.wantErrs) > 0) {
				t.Fatalf("error = %v, want %v", retErr, tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(retErr, want) {
					t.Errorf("error %v lost %v", retErr, want)
				}
			}
		})
	}
}

func TestDescribedAndReasonOf(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantDescribed bool
		wantReason    string
	}{
		{name: "success", wantDescribed: true},
		{name: "wait", err: Wait("C", "Waiting", time.Second, "x"), wantDescribed: true, wantReason: "Waiting"},
		{name: "invalid", err: Invalid("C", "Bad", errors.New("x")), wantDescribed: true, wantReason: "Bad"},
		{name: "transient", err: Fail("C", "Flaky", errors.New("x")), wantReason: "Flaky"},
		{name: "unclassified", err: errors.New("x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Described(tt.err); got != tt.wantDescribed {
				t.Errorf("Described = %v", got)
			}
			if got := ReasonOf(tt.err); got != tt.wantReason {
				t.Errorf("ReasonOf = %q", got)
			}
		})
	}
}

func TestRun(t *testing.T) {
	type scope struct{ ran []string }
	step := func(name string, out Outcome, err error) Step[*scope] {
		return Step[*scope]{Condition: name, Run: func(_ context.Context, s *scope) (Outcome, error) {
			s.ran = append(s.ran, name)
			return out, err
		}}
	}
	boom := errors.New("boom")
	tests := []struct {
		name      string
		steps     []Step[*scope]
		wantRan   int
		wantOut   Outcome
		wantCond  string
		wantReasn string
	}{
		{name: "all run, earliest requeue", steps: []Step[*scope]{step("A", Requeue(time.Minute), nil), step("B", Requeue(time.Second), nil)},
			wantRan: 2, wantOut: Requeue(time.Second)},
		{name: "a wait stops the pass and is recorded", steps: []Step[*scope]{step("A", Requeue(time.Minute), nil), step("B", Continue, Wait("B", "Waiting", time.Second, "x")), step("C", Continue, nil)},
			wantRan: 2, wantOut: Requeue(time.Minute), wantCond: "B", wantReasn: "Waiting"},
		{name: "an unclassified error is recorded on the step's condition", steps: []Step[*scope]{step("A", Continue, boom), step("B", Continue, nil)},
			wantRan: 1, wantCond: "A", wantReasn: anvilmeta.ReconcileErrorReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			s := &scope{}
			out, _ := Run(context.Background(), Conditions{List: &conds, Generation: 3}, s, tt.steps)
			if len(s.ran) != tt.wantRan || out != tt.wantOut {
				t.Fatalf("ran %v, outcome %+v", s.ran, out)
			}
			if tt.wantCond == "" {
				if len(conds) != 0 {
					t.Errorf("conditions = %+v, want none", conds)
				}
				return
			}
			c := apimeta.FindStatusCondition(conds, tt.wantCond)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.wantReasn || c.ObservedGeneration != 3 {
				t.Errorf("%s = %+v", tt.wantCond, c)
			}
		})
	}
}

func TestStepConditions(t *testing.T) {
	steps := []Step[int]{{Condition: "A"}, {Condition: "A"}, {Condition: "B"}}
	if got := StepConditions(steps); len(got) != 2 || got[0] != "A" || got[1] != "B" {
		t.Errorf("StepConditions = %v", got)
	}
}
