package nova

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestProgressChanged(t *testing.T) {
	deployment := func(change func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "n-api", Generation: 2, Labels: map[string]string{"a": "b"}},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 2},
		}
		if change != nil {
			change(d)
		}
		return d
	}
	job := func(change func(*batchv1.Job)) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "n-db-api-1", Generation: 1}}
		if change != nil {
			change(j)
		}
		return j
	}
	complete := func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	for _, tc := range []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"a Deployment's timestamp-only status write", deployment(nil), deployment(func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, LastUpdateTime: metav1.Now()}}
		}), false},
		{"a counter RolledOut does not report", deployment(nil), deployment(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }), false},
		{"one more updated pod", deployment(nil), deployment(func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 2 }), true},
		{"a new generation", deployment(nil), deployment(func(d *appsv1.Deployment) { d.Generation = 3 }), true},
		{"a label removed", deployment(nil), deployment(func(d *appsv1.Deployment) { d.Labels = nil }), true},
		{"an annotation added", deployment(nil), deployment(func(d *appsv1.Deployment) { d.Annotations = map[string]string{"x": "y"} }), true},
		{"being deleted", deployment(nil), deployment(func(d *appsv1.Deployment) { d.DeletionTimestamp = ptr.To(metav1.Now()) }), true},
		{"a running Job's counters", job(nil), job(func(j *batchv1.Job) { j.Status.Active = 1 }), false},
		{"a Job completes", job(nil), job(complete), true},
		{"a Job fails", job(nil), job(func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
		}), true},
		{"a finished Job's later status write", job(complete), job(func(j *batchv1.Job) { complete(j); j.Status.Succeeded = 1 }), false},
		{"another kind", &corev1.Secret{}, &corev1.Secret{}, true},
		{"kinds that differ", deployment(nil), job(nil), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProgressChanged(tc.old, tc.new); got != tc.want {
				t.Errorf("ProgressChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
