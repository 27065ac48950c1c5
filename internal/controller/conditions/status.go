package conditions

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/flow"
)

// Summary is what a kind's status rollup needs to know about it.
type Summary struct {
	// Steps are the step conditions Ready rolls up, in pipeline order.
	Steps []string
	// ReadyMessage is Ready's message when every step is True.
	ReadyMessage string
	// Events derives the events of this pass's condition transitions.
	Events func(before, after []metav1.Condition) []Event
}

// Summarize stamps observedGeneration only when the pass's outcome
// describes generation (it succeeded, or stopped at a wait or at invalid
// input its condition reports), derives Ready, and sets Reconciling and
// Stalled from it (Progress). It is pure.
func Summarize(status *anvilmeta.CommonStatus, generation int64, passErr error, sum Summary) {
	if flow.Described(passErr) {
		status.ObservedGeneration = generation
	}
	ready := Ready(sum.Steps, status.Conditions, generation, sum.ReadyMessage)
	apimeta.SetStatusCondition(&status.Conditions, ready)
	Progress(&status.Conditions, ready, passErr)
}

// PatchStatus ends every pass the same way: Summarize, then write the
// status with one merge patch, or nothing at all when the status did not
// change, and then record the events of the transitions. An object deleted
// meanwhile is not an error.
//
// The patch carries the resourceVersion the pass started from. A pass that
// began from a cached copy older than the object's last status write would
// otherwise record that write's transitions a second time; its patch is
// refused instead and records nothing, and the Conflict goes back to the
// controller so that the object is queued again: the newer version's own
// watch event may be filtered out, as a status-only change is.
func PatchStatus(ctx context.Context, c client.Client, rec events.EventRecorder, before, obj client.Object,
	beforeStatus, status *anvilmeta.CommonStatus, passErr error, sum Summary) error {
	Summarize(status, obj.GetGeneration(), passErr, sum)
	// A finalizer patch of this pass (flow.AddFinalizer) moved obj's
	// version and finalizers. The status patch locks on that version, so
	// only a stranger's write since then makes it conflict, and the
	// finalizers are not part of the comparison.
	before.SetResourceVersion(obj.GetResourceVersion())
	before.SetFinalizers(obj.GetFinalizers())
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	data, err := client.MergeFrom(before).Data(obj)
	if err != nil {
		return err
	}
	if string(data) == "{}" {
		// A settled pass changed nothing and writes nothing.
		return nil
	}
	err = c.Status().Patch(ctx, obj, patch)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if sum.Events != nil {
		for _, ev := range sum.Events(beforeStatus.Conditions, status.Conditions) {
			rec.Eventf(obj, nil, ev.Type, ev.Reason, "Reconcile", "%s", ev.Message)
		}
	}
	return nil
}
