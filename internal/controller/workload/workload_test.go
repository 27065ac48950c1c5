package workload

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

func TestWithPullPolicy(t *testing.T) {
	template := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", ImagePullPolicy: corev1.PullNever}},
			Containers:     []corev1.Container{{Name: "a"}, {Name: "b", ImagePullPolicy: corev1.PullAlways}},
		}}
	}
	tests := []struct {
		name   string
		policy corev1.PullPolicy
	}{
		{name: "a policy reaches every container", policy: corev1.PullIfNotPresent},
		{name: "no policy clears every container's", policy: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithPullPolicy(tt.policy, template())
			for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
				if c.ImagePullPolicy != tt.policy {
					t.Errorf("container %s pulls %q, want %q", c.Name, c.ImagePullPolicy, tt.policy)
				}
			}
			if len(got.Spec.InitContainers) != 1 || len(got.Spec.Containers) != 2 {
				t.Errorf("containers changed: %+v", got.Spec)
			}
		})
	}
}

func TestPodTemplateParts(t *testing.T) {
	env := FieldEnv("NODE_IP", "status.hostIP")
	if env.Name != "NODE_IP" || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "status.hostIP" || env.Value != "" {
		t.Errorf("FieldEnv = %+v", env)
	}
	v := ScriptsVolume("x-scripts")
	if v.Name != ScriptsVolumeName || v.ConfigMap == nil || v.ConfigMap.Name != "x-scripts" || v.ConfigMap.DefaultMode == nil || *v.ConfigMap.DefaultMode != 0o555 {
		t.Errorf("ScriptsVolume = %+v", v)
	}
	if m := ScriptsMount("/scripts"); m.Name != v.Name || m.MountPath != "/scripts" || !m.ReadOnly {
		t.Errorf("ScriptsMount = %+v, want the scripts volume read-only", m)
	}
}

func TestDaemonSetRolledOut(t *testing.T) {
	ds := func(generation int64, st appsv1.DaemonSetStatus) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ovs", Generation: generation}, Status: st}
	}
	good := appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3}
	with := func(change func(*appsv1.DaemonSetStatus)) appsv1.DaemonSetStatus {
		st := good
		change(&st)
		return st
	}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		want bool
		why  string
	}{
		{name: "every node runs a ready, current pod", ds: ds(2, good), want: true},
		{name: "the controller saw a later generation too", ds: ds(1, good), want: true},
		{name: "observed generation behind", ds: ds(3, good), why: "3 of 3 pods of ovs are ready"},
		{name: "a generation never written", ds: ds(0, with(func(s *appsv1.DaemonSetStatus) { s.ObservedGeneration = 0 })),
			why: "3 of 3 pods of ovs are ready"},
		{name: "updated below desired, as under OnDelete", ds: ds(2, with(func(s *appsv1.DaemonSetStatus) { s.UpdatedNumberScheduled = 2 })),
			why: "3 of 3 pods of ovs are ready"},
		{name: "ready below desired", ds: ds(2, with(func(s *appsv1.DaemonSetStatus) { s.NumberReady = 2 })), why: "2 of 3 pods of ovs are ready"},
		{name: "available below desired", ds: ds(2, with(func(s *appsv1.DaemonSetStatus) { s.NumberAvailable = 2 })),
			why: "3 of 3 pods of ovs are ready"},
		{name: "no node selected, observed", ds: ds(1, appsv1.DaemonSetStatus{ObservedGeneration: 1}), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := DaemonSetRolledOut(tt.ds)
			if got != tt.want || why != tt.why {
				t.Errorf("DaemonSetRolledOut(generation %d, %+v) = %v, %q; want %v, %q", tt.ds.Generation, tt.ds.Status, got, why, tt.want, tt.why)
			}
		})
	}
}

func TestJobFinished(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status, LastTransitionTime: at}
	}
	tests := []struct {
		name               string
		conds              []batchv1.JobCondition
		wantDone, wantFail bool
	}{
		{name: "no condition: running"},
		{name: "Complete True", conds: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue)}, wantDone: true},
		{name: "Failed True", conds: []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue)}, wantDone: true, wantFail: true},
		{name: "Complete False is not done", conds: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionFalse)}},
		{name: "Failed Unknown is not done", conds: []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionUnknown)}},
		{name: "FailureTarget alone is not done", conds: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue)}},
		{name: "SuccessCriteriaMet alone is not done", conds: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)}},
		{name: "Suspended is not done", conds: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}},
		{name: "FailureTarget then Failed", wantDone: true, wantFail: true,
			conds: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)}},
		{name: "SuccessCriteriaMet then Complete", wantDone: true,
			conds: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, failed, when := JobFinished(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tt.conds}})
			if done != tt.wantDone || failed != tt.wantFail {
				t.Errorf("JobFinished = done %v, failed %v; want done %v, failed %v", done, failed, tt.wantDone, tt.wantFail)
			}
			switch {
			case done && !when.Equal(&at):
				t.Errorf("finished at %v, want %v", when, at)
			case !done && !when.IsZero():
				t.Errorf("finished at %v for a running Job, want the zero time", when)
			}
		})
	}
}

func TestWriteError(t *testing.T) {
	notOwned := &childwriter.NotOwnedError{Kind: "DaemonSet", Namespace: "ns", Name: "x"}
	tests := []struct {
		name     string
		err      error
		terminal bool
	}{
		{name: "a foreign object of the name is invalid input", err: notOwned, terminal: true},
		{name: "wrapped, too", err: errors.Join(errors.New("applying"), notOwned), terminal: true},
		{name: "anything else is retried", err: errors.New("connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteError("Ready", "WriteFailed", tt.err)
			var se *flow.StepError
			if !errors.As(err, &se) {
				t.Fatalf("WriteError = %v, want a step error", err)
			}
			if se.Condition != "Ready" || se.Reason != "WriteFailed" || se.Terminal != tt.terminal || !errors.Is(err, tt.err) {
				t.Errorf("WriteError = %+v, want Ready, WriteFailed, terminal %v, wrapping %v", se, tt.terminal, tt.err)
			}
		})
	}
}
