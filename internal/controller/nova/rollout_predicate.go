package nova

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// rolloutProgress lets through the updates of a Deployment or a Job that
// can change what a pass does: a new spec, new labels or annotations (drift
// to repair), a deletion, or a new answer from RolledOut or StateOf. A
// rolling Deployment and a running Job rewrite their status several times a
// second: counters, timestamps, the Progressing condition. A pass for each
// would only find the same answer, and while they queue the Nova's
// contract waits behind them.
var rolloutProgress = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool { return ProgressChanged(e.ObjectOld, e.ObjectNew) },
}

// ProgressChanged tells whether an update of a Deployment or a Job can change
// what the Nova controller does with it. Any other kind always counts.
func ProgressChanged(oldObj, newObj client.Object) bool {
	if oldObj == nil || newObj == nil || metadataChanged(oldObj, newObj) {
		return true
	}
	switch n := newObj.(type) {
	case *appsv1.Deployment:
		o, ok := oldObj.(*appsv1.Deployment)
		if !ok {
			return true
		}
		oldDone, oldWhy := RolledOut(o)
		newDone, newWhy := RolledOut(n)
		return oldDone != newDone || oldWhy != newWhy
	case *batchv1.Job:
		o, ok := oldObj.(*batchv1.Job)
		return !ok || StateOf(o) != StateOf(n)
	}
	return true
}

// metadataChanged compares what a pass reads or repairs in an object's
// metadata.
func metadataChanged(oldObj, newObj client.Object) bool {
	return oldObj.GetGeneration() != newObj.GetGeneration() ||
		!oldObj.GetDeletionTimestamp().Equal(newObj.GetDeletionTimestamp()) ||
		!maps.Equal(oldObj.GetLabels(), newObj.GetLabels()) ||
		!maps.Equal(oldObj.GetAnnotations(), newObj.GetAnnotations())
}
