package novacompute

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestDecideNodes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	poolLabel := map[string]string{"pool": "a", corev1.LabelTopologyZone: "z1"}
	sel := map[string]string{"pool": "a"}
	node := func(name string) NodeView { return NodeView{Name: name, Labels: poolLabel} }
	entry := func(name, phase string) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: name, Phase: phase, Zone: "z1"}
	}
	withService := func(e novav1alpha1.NovaComputeNode) novav1alpha1.NovaComputeNode {
		e.ServiceID = "svc-" + e.Name
		return e
	}
	conflict := func(name, with string) novav1alpha1.NovaComputeNode {
		e := entry(name, novav1alpha1.NodeConflict)
		e.ConflictsWith = with
		return e
	}
	phases := func(d NodeDecision) map[string]string {
		m := map[string]string{}
		for _, n := range d.Nodes {
			m[n.Name] = n.Phase
		}
		return m
	}
	tests := []struct {
		name         string
		in           NodeInput
		want         map[string]string
		newConflicts []string
		handover     []string
		conflictWith string
	}{
		{name: "a same-named node held by a younger pool on another cluster is a Conflict",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "elsewhere", Created: t0.Add(time.Hour), Held: map[string]string{"n1": novav1alpha1.NodeActive}}}},
			want: map[string]string{"n1": novav1alpha1.NodeConflict}, newConflicts: []string{"n1"}, conflictWith: "elsewhere"},
		{name: "an older pool on another cluster that holds other names takes nothing here",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "elsewhere", Created: t0.Add(-time.Hour), Held: map[string]string{"n2": novav1alpha1.NodeActive}}}},
			want: map[string]string{"n1": novav1alpha1.NodePending}},
		{name: "a new selected node is taken as Pending",
			in:   NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")}},
			want: map[string]string{"n1": novav1alpha1.NodePending}},
		{name: "a held Active node stays",
			in:   NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")}, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeActive))}},
			want: map[string]string{"n1": novav1alpha1.NodeActive}},
		{name: "a Draining node that comes back is Active with its service",
			in:   NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")}, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeDraining))}},
			want: map[string]string{"n1": novav1alpha1.NodeActive}},
		{name: "a Releasing node that comes back without a service is Pending",
			in:   NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")}, Current: []novav1alpha1.NovaComputeNode{entry("n1", novav1alpha1.NodeReleasing)}},
			want: map[string]string{"n1": novav1alpha1.NodePending}},
		{name: "a node another pool holds is a Conflict",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "younger", Created: t0.Add(time.Hour), Selector: sel, Held: map[string]string{"n1": novav1alpha1.NodeActive}}}},
			want: map[string]string{"n1": novav1alpha1.NodeConflict}, newConflicts: []string{"n1"}, conflictWith: "younger"},
		{name: "a node an older pool selects is a Conflict",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "older", Created: t0.Add(-time.Hour), Selector: sel}}},
			want: map[string]string{"n1": novav1alpha1.NodeConflict}, newConflicts: []string{"n1"}, conflictWith: "older"},
		{name: "a younger pool that selects the node does not matter",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "younger", Created: t0.Add(time.Hour), Selector: sel}}},
			want: map[string]string{"n1": novav1alpha1.NodePending}},
		{name: "the same creation time is ordered by name",
			in: NodeInput{Pool: "b", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "a", Created: t0, Selector: sel}}},
			want: map[string]string{"n1": novav1alpha1.NodeConflict}, newConflicts: []string{"n1"}, conflictWith: "a"},
		{name: "a deleting older pool takes no new node",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")},
				Rivals: []Rival{{Name: "older", Created: t0.Add(-time.Hour), Deleting: true, Selector: sel}}},
			want: map[string]string{"n1": novav1alpha1.NodePending}},
		{name: "race residue: an older live pool also runs the node",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")}, Current: []novav1alpha1.NovaComputeNode{entry("n1", novav1alpha1.NodePending)},
				Rivals: []Rival{{Name: "older", Created: t0.Add(-time.Hour), Selector: sel, Held: map[string]string{"n1": novav1alpha1.NodePending}}}},
			want: map[string]string{"n1": novav1alpha1.NodeConflict}, newConflicts: []string{"n1"}, conflictWith: "older"},
		{name: "an old Conflict is not new",
			in: NodeInput{Pool: "p", Created: t0, Selected: []NodeView{node("n1")}, Current: []novav1alpha1.NovaComputeNode{conflict("n1", "older")},
				Rivals: []Rival{{Name: "older", Created: t0.Add(-time.Hour), Selector: sel, Held: map[string]string{"n1": novav1alpha1.NodeActive}}}},
			want: map[string]string{"n1": novav1alpha1.NodeConflict}, conflictWith: "older"},
		{name: "an unselected held node drains",
			in:   NodeInput{Pool: "p", Created: t0, Known: map[string]map[string]string{"n1": {}}, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeActive))}},
			want: map[string]string{"n1": novav1alpha1.NodeDraining}},
		{name: "a held node that is gone drains",
			in:   NodeInput{Pool: "p", Created: t0, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeActive))}},
			want: map[string]string{"n1": novav1alpha1.NodeDraining}},
		{name: "a deleting pool drains what it holds, even if selected",
			in:   NodeInput{Pool: "p", Created: t0, Deleting: true, Known: map[string]map[string]string{"n1": poolLabel}, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeActive))}},
			want: map[string]string{"n1": novav1alpha1.NodeDraining}},
		{name: "a node another live pool selects is handed over",
			in: NodeInput{Pool: "p", Created: t0, Known: map[string]map[string]string{"n1": {"pool": "b"}}, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeActive))},
				Rivals: []Rival{{Name: "b", Created: t0, Selector: map[string]string{"pool": "b"}}}},
			want: map[string]string{"n1": novav1alpha1.NodeReleasing}, handover: []string{"n1"}},
		{name: "a Releasing entry stays Releasing",
			in:   NodeInput{Pool: "p", Created: t0, Current: []novav1alpha1.NovaComputeNode{withService(entry("n1", novav1alpha1.NodeReleasing))}},
			want: map[string]string{"n1": novav1alpha1.NodeReleasing}},
		{name: "an unselected Conflict entry is dropped",
			in:   NodeInput{Pool: "p", Created: t0, Current: []novav1alpha1.NovaComputeNode{conflict("n1", "older")}},
			want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideNodes(tt.in)
			if p := phases(got); !reflect.DeepEqual(p, tt.want) {
				t.Errorf("phases = %v, want %v", p, tt.want)
			}
			if !reflect.DeepEqual(got.NewConflicts, tt.newConflicts) {
				t.Errorf("new conflicts = %v, want %v", got.NewConflicts, tt.newConflicts)
			}
			for _, h := range tt.handover {
				if !got.Handover[h] {
					t.Errorf("%s is not a handover", h)
				}
			}
			if len(got.Handover) != len(tt.handover) {
				t.Errorf("handover = %v, want %v", got.Handover, tt.handover)
			}
			if tt.conflictWith != "" && (len(got.Nodes) != 1 || got.Nodes[0].ConflictsWith != tt.conflictWith) {
				t.Errorf("conflictsWith = %+v, want %s", got.Nodes, tt.conflictWith)
			}
		})
	}
}
