// Package flow is the small vocabulary every reconciler's steps share, and
// the one loop that runs them.
//
// A step either succeeds, setting its own condition from what it observed
// and perhaps asking for a timed requeue through its Outcome, or fails with
// a *StepError that carries the condition type and reason to report. The
// runner records that condition, stops the pass, and Result turns the
// pass's outcome and error into controller-runtime's answer in one place:
// a wait requeues after its delay, invalid input is terminal, and anything
// else is returned for backoff. Nobody reads a reason back to decide what
// to do: code that must know why a pass stopped asks the error (ReasonOf).
package flow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// Outcome is what a step that succeeded asks for. The zero value means
// "done, go on".
type Outcome struct {
	// RequeueAfter asks for another pass after the duration, because the
	// step waits for something it cannot watch, or watches with a poll.
	RequeueAfter time.Duration
}

// ConflictRequeue is how soon a pass whose status patch lost a race with
// another write to the object runs again (JoinPatchError).
const ConflictRequeue = 200 * time.Millisecond

// Continue is the outcome of a step that is done.
var Continue = Outcome{}

// Requeue asks for another pass after d and lets the later steps run.
func Requeue(d time.Duration) Outcome { return Outcome{RequeueAfter: d} }

// Merge combines outcomes: the earliest requeue wins.
func Merge(a, b Outcome) Outcome {
	out := a
	if b.RequeueAfter > 0 && (out.RequeueAfter == 0 || b.RequeueAfter < out.RequeueAfter) {
		out.RequeueAfter = b.RequeueAfter
	}
	return out
}

// StepError is a step that could not finish. It names the condition the
// step owns and the reason to report there; its message is the wrapped
// error's, which never carries a credential.
type StepError struct {
	// Condition is the condition type the runner sets False.
	Condition string
	// Reason is the documented reason of that condition.
	Reason string
	// Err is the cause; its text becomes the condition's message.
	Err error
	// RequeueAfter is set for a wait: an input that is not there yet.
	// The pass is not an error to controller-runtime and is retried after
	// the delay (a watch usually brings it sooner).
	RequeueAfter time.Duration
	// Terminal marks invalid input the user must fix; retrying cannot help.
	Terminal bool
	// NeedsUser marks a wait that only a person can end, such as a
	// namespace an administrator has not opted in: the pass is retried
	// after RequeueAfter, but the object reads as stalled meanwhile.
	NeedsUser bool
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Fail is a transient failure of a step: it is reported under reason and
// retried with backoff.
func Fail(condition, reason string, err error) error {
	return &StepError{Condition: condition, Reason: reason, Err: err}
}

// Invalid is invalid input: it is reported under reason and not retried
// until the object or an input it watches changes.
func Invalid(condition, reason string, err error) error {
	return &StepError{Condition: condition, Reason: reason, Err: err, Terminal: true}
}

// Wait is an input that is not there yet: it is reported under reason and
// the pass is retried after d.
func Wait(condition, reason string, d time.Duration, format string, args ...any) error {
	return &StepError{Condition: condition, Reason: reason, Err: fmt.Errorf(format, args...), RequeueAfter: d}
}

// WaitOnUser is a wait that only a person can end, such as an
// administrator's label: it is retried after d like any wait, and the
// object reads as stalled meanwhile.
func WaitOnUser(condition, reason string, d time.Duration, format string, args ...any) error {
	return &StepError{Condition: condition, Reason: reason, Err: fmt.Errorf(format, args...), RequeueAfter: d, NeedsUser: true}
}

// ReasonOf returns the reason a pass's error reported, or "" for nil or an
// error no step classified.
func ReasonOf(err error) string {
	var se *StepError
	if errors.As(err, &se) {
		return se.Reason
	}
	return ""
}

// Stalled tells whether a pass that ended with err stopped on input that
// a retry cannot fix, and returns the condition and reason it reported.
func Stalled(err error) (condition, reason string, ok bool) {
	var se *StepError
	if errors.As(err, &se) && (se.Terminal || se.NeedsUser) {
		return se.Condition, se.Reason, true
	}
	return "", "", false
}

// Described tells whether the status written after a pass that ended with
// err describes the object's current generation: the pass succeeded, or it
// stopped at a wait or at invalid input, which its condition reports. A
// transient failure leaves observedGeneration where it was.
func Described(err error) bool {
	var se *StepError
	return err == nil || (errors.As(err, &se) && (se.RequeueAfter > 0 || se.Terminal))
}

// Conditions is where the runner records a failed step: the object's
// condition list and the generation the pass works on.
type Conditions struct {
	List       *[]metav1.Condition
	Generation int64
}

// Set sets one condition stamped with the pass's generation.
func (c Conditions) Set(typ string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(c.List, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: c.Generation,
	})
}

// Record reports a failed step on its condition: a *StepError under its own
// condition and reason; any other error, which no step classified (an
// apiserver error, say), under the step's condition and ReconcileError.
func (c Conditions) Record(condition string, err error) {
	var se *StepError
	if errors.As(err, &se) {
		c.Set(se.Condition, metav1.ConditionFalse, se.Reason, se.Error())
		return
	}
	c.Set(condition, metav1.ConditionFalse, anvilmeta.ReconcileErrorReason, err.Error())
}

// Step is one stage of a pass over scope S and the condition it owns.
type Step[S any] struct {
	// Condition is the condition the step reports; an unclassified error
	// of the step is recorded there.
	Condition string
	// Run does the step's work.
	Run func(context.Context, S) (Outcome, error)
}

// StepConditions returns the conditions steps own, in order, without repeats:
// the ones Ready rolls up.
func StepConditions[S any](steps []Step[S]) []string {
	var out []string
	for _, s := range steps {
		if !slices.Contains(out, s.Condition) {
			out = append(out, s.Condition)
		}
	}
	return out
}

// Run runs steps in order until one fails, records the failure, and
// returns the merged outcome with the failure.
func Run[S any](ctx context.Context, conds Conditions, scope S, steps []Step[S]) (Outcome, error) {
	outcome := Continue
	for _, step := range steps {
		out, err := step.Run(ctx, scope)
		outcome = Merge(outcome, out)
		if err != nil {
			conds.Record(step.Condition, err)
			return outcome, err
		}
	}
	return outcome, nil
}

// Result decides the requeue of a pass from its merged outcome and its
// error, in one place for every reconciler: a wait requeues after its
// delay, invalid input is terminal, any other error is returned for
// backoff, and otherwise the outcome's requeue applies.
func Result(o Outcome, err error) (ctrl.Result, error) {
	var se *StepError
	switch {
	case err == nil:
		return ctrl.Result{RequeueAfter: o.RequeueAfter}, nil
	case errors.As(err, &se) && se.RequeueAfter > 0:
		return ctrl.Result{RequeueAfter: Merge(o, Requeue(se.RequeueAfter)).RequeueAfter}, nil
	case errors.As(err, &se) && se.Terminal:
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	return ctrl.Result{}, err
}

// JoinPatchError folds the error of a pass's closing status patch into its
// result. The error goes back for backoff and the planned requeue is
// dropped: controller-runtime ignores a requeue next to an error, and warns
// when it sees both.
//
// A conflict is no failure: someone wrote the object after the pass read
// it, so the status the pass derived may rest on an older version and is
// rightly dropped. The pass asks for a new one after ConflictRequeue
// instead of an error, which would be logged with a stack trace and count
// as a failed reconcile; the write that raced may not wake the controller
// itself (a metadata or status write under a generation predicate).
func JoinPatchError(res *ctrl.Result, retErr *error, patchErr error) {
	if patchErr == nil {
		return
	}
	if apierrors.IsConflict(patchErr) && *retErr == nil {
		if res.RequeueAfter == 0 || res.RequeueAfter > ConflictRequeue {
			res.RequeueAfter = ConflictRequeue
		}
		return
	}
	*res = ctrl.Result{}
	*retErr = errors.Join(*retErr, patchErr)
}
