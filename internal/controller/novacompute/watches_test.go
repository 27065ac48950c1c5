package novacompute

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestNodeMetadataChanged(t *testing.T) {
	node := func(labels, annotations map[string]string, heartbeat string) *corev1.Node {
		n := &corev1.Node{}
		n.Labels, n.Annotations = labels, annotations
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Reason: heartbeat}}
		return n
	}
	base := node(map[string]string{"pool": "a"}, map[string]string{"x": "1"}, "t1")
	tests := []struct {
		name    string
		updated *corev1.Node
		want    bool
	}{
		{"a status heartbeat", node(map[string]string{"pool": "a"}, map[string]string{"x": "1"}, "t2"), false},
		{"a label removed", node(map[string]string{}, map[string]string{"x": "1"}, "t1"), true},
		{"a label changed", node(map[string]string{"pool": "b"}, map[string]string{"x": "1"}, "t1"), true},
		{"the custom-traits annotation added", node(map[string]string{"pool": "a"}, map[string]string{"x": "1", novav1alpha1.CustomTraitsAnnotation: ""}, "t1"), true},
		{"another annotation rewritten with a heartbeat", node(map[string]string{"pool": "a"}, map[string]string{"x": "2"}, "t2"), false},
	}
	for _, tt := range tests {
		if got := nodeMetadataChanged(base, tt.updated); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDiscoveryFinished(t *testing.T) {
	job := func(conds ...batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return j
	}
	running, done, failed := job(), job(batchv1.JobComplete), job(batchv1.JobFailed)
	tests := []struct {
		name     string
		old, new *batchv1.Job
		want     bool
	}{
		{"still running", running, running, false},
		{"succeeded", running, done, true},
		{"failed", running, failed, true},
		{"was done already", done, done, false},
	}
	for _, tt := range tests {
		if got := (discoveryFinished{}).Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: passes = %v, want %v", tt.name, got, tt.want)
		}
	}
	if (discoveryFinished{}).Create(event.CreateEvent{Object: done}) {
		t.Error("a created Job woke the pools")
	}
}
