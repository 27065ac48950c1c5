package novacompute

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestApplyFailedBuilds(t *testing.T) {
	node := func(name, phase string, failed *int32) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: name, Phase: phase, FailedBuilds: failed}
	}
	active := novav1alpha1.NodeActive
	tests := []struct {
		name      string
		nodes     []novav1alpha1.NovaComputeNode
		counts    map[string]int32
		threshold *int32
		want      map[string]*int32 // FailedBuilds by node after the pass
		wantRises []FailedBuildsRise
	}{
		{
			name:   "first read fills the entries; no threshold, no event",
			nodes:  []novav1alpha1.NovaComputeNode{node("a", active, nil), node("b", active, nil)},
			counts: map[string]int32{"a": 0, "b": 5},
			want:   map[string]*int32{"a": ptr.To[int32](0), "b": ptr.To[int32](5)},
		},
		{
			name:      "a rise to the threshold warns",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", active, ptr.To[int32](2))},
			counts:    map[string]int32{"a": 3},
			threshold: ptr.To[int32](3),
			want:      map[string]*int32{"a": ptr.To[int32](3)},
			wantRises: []FailedBuildsRise{{Node: "a", Count: 3}},
		},
		{
			name:      "a counter already above the threshold stays quiet",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", active, ptr.To[int32](3))},
			counts:    map[string]int32{"a": 9},
			threshold: ptr.To[int32](3),
			want:      map[string]*int32{"a": ptr.To[int32](9)},
		},
		{
			name:      "a first read above the threshold warns once",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", active, nil)},
			counts:    map[string]int32{"a": 4},
			threshold: ptr.To[int32](1),
			want:      map[string]*int32{"a": ptr.To[int32](4)},
			wantRises: []FailedBuildsRise{{Node: "a", Count: 4}},
		},
		{
			name:      "below the threshold stays quiet",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", active, ptr.To[int32](0))},
			counts:    map[string]int32{"a": 2},
			threshold: ptr.To[int32](3),
			want:      map[string]*int32{"a": ptr.To[int32](2)},
		},
		{
			name:      "a reset re-arms the warning",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", active, ptr.To[int32](5))},
			counts:    map[string]int32{"a": 0},
			threshold: ptr.To[int32](3),
			want:      map[string]*int32{"a": ptr.To[int32](0)},
		},
		{
			name:   "a node without a row keeps its value",
			nodes:  []novav1alpha1.NovaComputeNode{node("a", novav1alpha1.NodePending, nil), node("b", active, ptr.To[int32](2))},
			counts: map[string]int32{},
			want:   map[string]*int32{"a": nil, "b": ptr.To[int32](2)},
		},
		{
			name:      "a Conflict node is another pool's host",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", novav1alpha1.NodeConflict, nil)},
			counts:    map[string]int32{"a": 7},
			threshold: ptr.To[int32](1),
			want:      map[string]*int32{"a": nil},
		},
		{
			name:      "draining nodes are still hosts",
			nodes:     []novav1alpha1.NovaComputeNode{node("a", novav1alpha1.NodeDraining, ptr.To[int32](0))},
			counts:    map[string]int32{"a": 1},
			threshold: ptr.To[int32](1),
			want:      map[string]*int32{"a": ptr.To[int32](1)},
			wantRises: []FailedBuildsRise{{Node: "a", Count: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rises := ApplyFailedBuilds(tt.nodes, tt.counts, tt.threshold)
			if !slices.Equal(rises, tt.wantRises) {
				t.Errorf("rises = %+v, want %+v", rises, tt.wantRises)
			}
			for _, n := range tt.nodes {
				if got, want := n.FailedBuilds, tt.want[n.Name]; !ptr.Equal(got, want) {
					t.Errorf("node %s failedBuilds = %v, want %v", n.Name, ptr.Deref(got, -1), ptr.Deref(want, -1))
				}
			}
		})
	}
}

// The gauge follows the status: a node that leaves loses its series, and
// a pool that is gone loses all of them.
func TestObserveFailedBuilds(t *testing.T) {
	pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-fb", Name: "pool-fb"}}
	pool.Status.Nodes = []novav1alpha1.NovaComputeNode{
		{Name: "a", Phase: novav1alpha1.NodeActive, FailedBuilds: ptr.To[int32](2)},
		{Name: "b", Phase: novav1alpha1.NodeActive, FailedBuilds: ptr.To[int32](0)},
		{Name: "c", Phase: novav1alpha1.NodePending},
	}
	observeFailedBuilds(&novav1alpha1.NovaCompute{}, pool)
	if got := seriesOf(t)["a"]; got != 2 {
		t.Errorf("node a reads %v, want 2", got)
	}
	if n := len(seriesOf(t)); n != 2 {
		t.Fatalf("%d series, want 2 (a node never read has none)", n)
	}

	before := pool.DeepCopy()
	pool.Status.Nodes = pool.Status.Nodes[:1]
	observeFailedBuilds(before, pool)
	if n := len(seriesOf(t)); n != 1 {
		t.Errorf("%d series after node b left, want 1", n)
	}

	before = pool.DeepCopy()
	now := metav1.Now()
	pool.DeletionTimestamp = &now
	observeFailedBuilds(before, pool)
	if n := len(seriesOf(t)); n != 0 {
		t.Errorf("%d series after the pool was gone, want 0", n)
	}
}

// seriesOf returns the failed-builds gauge of pool-fb by node; other tests
// of the binary may hold series of their own pools.
func seriesOf(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "anvil_novacompute_failed_builds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pool"] == "pool-fb" {
				out[labels["node"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
