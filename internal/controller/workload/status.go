package workload

import (
	"errors"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// DaemonSetRolledOut tells whether every node the DaemonSet selects runs an
// available, ready pod of its current template, and otherwise says how many
// do. The DaemonSet controller must have seen the current generation, and a
// generation of 0 (an object never written) is not rolled out. An OnDelete
// DaemonSet whose old pods were not deleted yet is not rolled out either. A
// DaemonSet that selects no node is. It is pure.
func DaemonSetRolledOut(ds *appsv1.DaemonSet) (bool, string) {
	st := ds.Status
	want := st.DesiredNumberScheduled
	if ds.Generation == 0 || st.ObservedGeneration < ds.Generation ||
		st.UpdatedNumberScheduled < want || st.NumberReady < want || st.NumberAvailable < want {
		return false, strconv.Itoa(int(st.NumberReady)) + " of " + strconv.Itoa(int(want)) + " pods of " + ds.Name + " are ready"
	}
	return true, ""
}

// JobFinished tells whether a Job ended, whether it failed, and when: from
// its Complete or Failed condition, whichever is True. The conditions that
// come before them (SuccessCriteriaMet, FailureTarget) do not count, for
// the Job's pods may still run. A running Job returns the zero time. It is
// pure.
func JobFinished(job *batchv1.Job) (done, failed bool, at metav1.Time) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false, c.LastTransitionTime
		case batchv1.JobFailed:
			return true, true, c.LastTransitionTime
		}
	}
	return false, false, metav1.Time{}
}

// WriteError reports a failure to write a child on the step's condition
// under reason. A same-named object Anvil does not own is invalid input,
// which a retry would not change: it waits for the object or an input to
// change. Anything else is retried.
func WriteError(condition, reason string, err error) error {
	var notOwned *childwriter.NotOwnedError
	if errors.As(err, &notOwned) {
		return flow.Invalid(condition, reason, err)
	}
	return flow.Fail(condition, reason, err)
}
