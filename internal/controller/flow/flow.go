// Package flow is the small vocabulary every reconciler's steps share: what a
// step asks for next, and the one place that turns that into a requeue.
package flow

import (
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Outcome is what a step asks for. The zero value means "done, go on".
type Outcome struct {
	// RequeueAfter asks for another pass after the duration, because the
	// step waits for something it cannot watch, or watches with a poll.
	RequeueAfter time.Duration
	// Halt stops the remaining steps of this pass, because they depend on
	// what this step could not produce.
	Halt bool
}

// Continue is the outcome of a step that is done.
var Continue = Outcome{}

// Wait asks for another pass after d and lets the later steps run.
func Wait(d time.Duration) Outcome { return Outcome{RequeueAfter: d} }

// WaitAndHalt asks for another pass after d and stops this pass.
func WaitAndHalt(d time.Duration) Outcome { return Outcome{RequeueAfter: d, Halt: true} }

// Halt stops this pass without a timed requeue: a watch on the input that
// is wrong brings the next pass.
var Halt = Outcome{Halt: true}

// InvalidInputError is invalid input the user must fix. It is reported on a
// condition; retrying cannot help, so it does not requeue.
type InvalidInputError struct{ Err error }

func (e *InvalidInputError) Error() string { return e.Err.Error() }
func (e *InvalidInputError) Unwrap() error { return e.Err }

// Invalid wraps err as invalid input.
func Invalid(err error) error { return &InvalidInputError{Err: err} }

// Merge combines outcomes: the earliest requeue wins, and any halt halts.
func Merge(a, b Outcome) Outcome {
	out := Outcome{Halt: a.Halt || b.Halt, RequeueAfter: a.RequeueAfter}
	if b.RequeueAfter > 0 && (out.RequeueAfter == 0 || b.RequeueAfter < out.RequeueAfter) {
		out.RequeueAfter = b.RequeueAfter
	}
	return out
}

// Result decides the requeue of a pass from its merged outcome and its
// error, in one place for every reconciler: invalid input is terminal, any
// other error is returned for backoff, and otherwise the outcome's requeue
// applies.
func Result(o Outcome, err error) (ctrl.Result, error) {
	var invalid *InvalidInputError
	switch {
	case errors.As(err, &invalid):
		return ctrl.Result{}, reconcile.TerminalError(err)
	case err != nil:
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: o.RequeueAfter}, nil
}
