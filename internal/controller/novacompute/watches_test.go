package novacompute

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
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

func TestSiblingChange(t *testing.T) {
	pool := func(generation int64, nodes ...novav1alpha1.NovaComputeNode) *novav1alpha1.NovaCompute {
		p := &novav1alpha1.NovaCompute{}
		p.Generation, p.Status.Nodes = generation, nodes
		return p
	}
	node := func(name, phase, zone string) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: name, Phase: phase, Zone: zone}
	}
	pending, active := novav1alpha1.NodePending, novav1alpha1.NodeActive
	base := pool(1, node("n1", pending, "az1"))
	deleting := pool(1, node("n1", pending, "az1"))
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tests := []struct {
		name    string
		updated *novav1alpha1.NovaCompute
		want    bool
	}{
		{"nothing a sibling reads", pool(1, node("n1", pending, "az1")), false},
		{"a node mapped: Pending to Active", pool(1, node("n1", active, "az1")), false},
		{"a node starts draining", pool(1, node("n1", novav1alpha1.NodeDraining, "az1")), true},
		{"a node refused as a Conflict", pool(1, node("n1", novav1alpha1.NodeConflict, "az1")), true},
		{"a node's zone changed", pool(1, node("n1", pending, "az2")), true},
		{"a node added", pool(1, node("n1", pending, "az1"), node("n2", pending, "az1")), true},
		{"a node dropped", pool(1), true},
		{"the spec changed", pool(2, node("n1", pending, "az1")), true},
		{"deletion started", deleting, true},
	}
	for _, tt := range tests {
		if got := (siblingChange{}).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tt.updated}); got != tt.want {
			t.Errorf("%s: passes = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNovaChange(t *testing.T) {
	base := &novav1alpha1.Nova{}
	base.Generation, base.Status.InstalledRelease = 1, "2025.1"
	base.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: "nova-compute-config"}
	change := func(edit func(n *novav1alpha1.Nova)) *novav1alpha1.Nova {
		n := base.DeepCopy()
		edit(n)
		return n
	}
	tests := []struct {
		name    string
		updated *novav1alpha1.Nova
		want    bool
	}{
		{"a condition moved", change(func(n *novav1alpha1.Nova) {
			n.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Rolling"}}
		}), false},
		{"the image changed", change(func(n *novav1alpha1.Nova) { n.Generation, n.Spec.Image.Tag = 2, "2025.2" }), true},
		{"the Keystone endpoint changed", change(func(n *novav1alpha1.Nova) {
			n.Generation, n.Spec.KeystoneEndpoint = 2, "https://keystone.example:5000"
		}), true},
		{"the service user changed", change(func(n *novav1alpha1.Nova) { n.Generation, n.Spec.ServiceUser.Username = 2, "nova2" }), true},
		{"logging changed: the contract brings it", change(func(n *novav1alpha1.Nova) { n.Generation, n.Spec.Logging.Debug = 2, true }), false},
		{"the console proxy changed: the contract brings it", change(func(n *novav1alpha1.Nova) {
			n.Generation, n.Spec.ConsoleProxy = 2, &novav1alpha1.ConsoleProxySpec{Hostname: "vnc.example"}
		}), false},
		{"replicas changed", change(func(n *novav1alpha1.Nova) { n.Generation, n.Spec.Replicas = 2, ptr.To[int32](3) }), false},
		{"a new generation with a field pools read changed back", change(func(n *novav1alpha1.Nova) { n.Generation = 2 }), false},
		{"the ControlPlane applied another projection", change(func(n *novav1alpha1.Nova) {
			n.Annotations = map[string]string{childwriter.AppliedHashAnnotation: "other"}
		}), false},
		{"another annotation changed", change(func(n *novav1alpha1.Nova) { n.Annotations = map[string]string{"a": "b"} }), true},
		{"a release installed", change(func(n *novav1alpha1.Nova) { n.Status.InstalledRelease = "2025.2" }), true},
		{"the contract published under another name", change(func(n *novav1alpha1.Nova) {
			n.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: "other"}
		}), true},
		{"the contract withdrawn", change(func(n *novav1alpha1.Nova) { n.Status.ComputeConfigSecretRef = nil }), true},
		{"the manage config published", change(func(n *novav1alpha1.Nova) {
			n.Status.ManageConfigSecretRef = &anvilmeta.LocalObjectReference{Name: "nova-manage-config"}
		}), true},
		{"an owner added", change(func(n *novav1alpha1.Nova) {
			n.OwnerReferences = []metav1.OwnerReference{{Kind: "ControlPlane", Name: "cp"}}
		}), true},
		{"a label changed", change(func(n *novav1alpha1.Nova) { n.Labels = map[string]string{"a": "b"} }), true},
		{"deletion started", change(func(n *novav1alpha1.Nova) { n.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), true},
	}
	for _, tt := range tests {
		if got := (novaChange{}).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tt.updated}); got != tt.want {
			t.Errorf("%s: passes = %v, want %v", tt.name, got, tt.want)
		}
	}
}
