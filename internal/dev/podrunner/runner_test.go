package podrunner

import (
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// TestNodeObject checks the node a runner registers: schedulable, Ready,
// and labelled as the scheduler and DaemonSets expect.
func TestNodeObject(t *testing.T) {
	tests := []struct {
		name       string
		node       Node
		wantLabels map[string]string
	}{
		{
			name: "zone label",
			node: Node{Name: "hv-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-1"}},
			wantLabels: map[string]string{
				corev1.LabelHostname: "hv-1", corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH, corev1.LabelTopologyZone: "zone-1",
			},
		},
		{
			name: "no labels",
			node: Node{Name: "hv-2"},
			wantLabels: map[string]string{
				corev1.LabelHostname: "hv-2", corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH,
			},
		},
		{
			name: "a contradicting hostname label loses",
			node: Node{Name: "hv-3", Labels: map[string]string{corev1.LabelHostname: "other", "role": "hv"}},
			wantLabels: map[string]string{
				corev1.LabelHostname: "hv-3", corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH, "role": "hv",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nodeObject(tt.node)
			if n.Name != tt.node.Name {
				t.Errorf("name = %q", n.Name)
			}
			if len(n.Labels) != len(tt.wantLabels) {
				t.Errorf("labels = %v, want %v", n.Labels, tt.wantLabels)
			}
			for k, v := range tt.wantLabels {
				if n.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
				}
			}
			if len(n.Spec.Taints) != 0 || n.Spec.Unschedulable {
				t.Errorf("spec = %+v, want no taints", n.Spec)
			}
			ready := false
			for _, c := range n.Status.Conditions {
				switch c.Type {
				case corev1.NodeReady:
					ready = c.Status == corev1.ConditionTrue
				default:
					if c.Status != corev1.ConditionFalse {
						t.Errorf("condition %s = %s", c.Type, c.Status)
					}
				}
			}
			if !ready {
				t.Error("the node is not Ready")
			}
			if n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: HostIP}) {
				t.Errorf("addresses = %v", n.Status.Addresses)
			}
			if n.Status.Allocatable.Pods().Value() != 110 || n.Status.Capacity.Cpu().Value() != 64 {
				t.Errorf("capacity = %v", n.Status.Capacity)
			}
		})
	}
}

// TestNewValidatesOptions checks that bad options fail before anything is
// registered on a cluster.
func TestNewValidatesOptions(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"ok", Options{Config: cfg, StateDir: "s", Nodes: []Node{{Name: "a"}}}, ""},
		{"no config", Options{StateDir: "s", Nodes: []Node{{Name: "a"}}}, "rest config"},
		{"no state dir", Options{Config: cfg, Nodes: []Node{{Name: "a"}}}, "state directory"},
		{"no nodes", Options{Config: cfg, StateDir: "s"}, "at least one node"},
		{"bad name", Options{Config: cfg, StateDir: "s", Nodes: []Node{{Name: "../up"}}}, "node name"},
		{"duplicate", Options{Config: cfg, StateDir: "s", Nodes: []Node{{Name: "a"}, {Name: "a"}}}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if r.opts.Images == nil || !strings.HasPrefix(r.opts.StateDir, "/") {
					t.Errorf("defaults not applied: %+v", r.opts)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
