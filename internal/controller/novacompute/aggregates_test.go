package novacompute

import (
	"reflect"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

func zoned(name, phase, zone string) novav1alpha1.NovaComputeNode {
	return novav1alpha1.NovaComputeNode{Name: name, Phase: phase, Zone: zone}
}

func TestPoolZones(t *testing.T) {
	tests := []struct {
		name         string
		nodes        []novav1alpha1.NovaComputeNode
		wantZones    []string
		wantZoneless []string
	}{
		{name: "no nodes"},
		{name: "Pending and Active nodes count",
			nodes:     []novav1alpha1.NovaComputeNode{zoned("n1", novav1alpha1.NodePending, "z2"), zoned("n2", novav1alpha1.NodeActive, "z1")},
			wantZones: []string{"z1", "z2"}},
		{name: "Draining, Releasing and Conflict nodes do not count",
			nodes: []novav1alpha1.NovaComputeNode{
				zoned("n1", novav1alpha1.NodeDraining, "z1"), zoned("n2", novav1alpha1.NodeReleasing, "z2"),
				zoned("n3", novav1alpha1.NodeConflict, "z3"), zoned("n4", novav1alpha1.NodeDraining, ""),
				zoned("n5", novav1alpha1.NodeConflict, ""),
			}},
		{name: "zones are distinct and sorted",
			nodes: []novav1alpha1.NovaComputeNode{
				zoned("n1", novav1alpha1.NodeActive, "z3"), zoned("n2", novav1alpha1.NodeActive, "z1"),
				zoned("n3", novav1alpha1.NodePending, "z3"), zoned("n4", novav1alpha1.NodeActive, "z1"),
				zoned("n5", novav1alpha1.NodeDraining, "z0"),
			},
			wantZones: []string{"z1", "z3"}},
		{name: "nodes without a zone are listed, sorted",
			nodes: []novav1alpha1.NovaComputeNode{
				zoned("n9", novav1alpha1.NodeActive, ""), zoned("n2", novav1alpha1.NodeActive, "z1"),
				zoned("n1", novav1alpha1.NodePending, ""), zoned("n5", novav1alpha1.NodeReleasing, ""),
			},
			wantZones: []string{"z1"}, wantZoneless: []string{"n1", "n9"}},
		{name: "only zoneless nodes",
			nodes:        []novav1alpha1.NovaComputeNode{zoned("n1", novav1alpha1.NodePending, "")},
			wantZoneless: []string{"n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zones, zoneless := PoolZones(tt.nodes)
			if !slices.Equal(zones, tt.wantZones) {
				t.Errorf("zones = %v, want %v", zones, tt.wantZones)
			}
			if !slices.Equal(zoneless, tt.wantZoneless) {
				t.Errorf("zoneless = %v, want %v", zoneless, tt.wantZoneless)
			}
		})
	}
}

// aggPool is a pool of cp-nova with a UID, on a cluster ("" for the
// management cluster), holding nodes.
func aggPool(uid, cluster string, deleting bool, nodes ...novav1alpha1.NovaComputeNode) novav1alpha1.NovaCompute {
	p := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "openstack", UID: types.UID(uid)}}
	p.Spec.NovaRef.Name = "cp-nova"
	if cluster != "" {
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	p.Status.Nodes = nodes
	return p
}

func TestRequiredAggregates(t *testing.T) {
	active := func(name, zone string) novav1alpha1.NovaComputeNode {
		return zoned(name, novav1alpha1.NodeActive, zone)
	}
	const tft = novav1alpha1.TenantFilterTestsAggregate
	tests := []struct {
		name         string
		pools        []novav1alpha1.NovaCompute
		selfNodes    []novav1alpha1.NovaComputeNode
		selfDeleting bool
		want         []string
	}{
		{name: "a live pool needs its zones and tenant_filter_tests",
			pools:     []novav1alpha1.NovaCompute{aggPool("self", "", false)},
			selfNodes: []novav1alpha1.NovaComputeNode{active("n1", "z1"), active("n2", "z2")},
			want:      []string{tft, "z1", "z2"}},
		{name: "a live pool without nodes still needs tenant_filter_tests",
			pools: []novav1alpha1.NovaCompute{aggPool("self", "", false)},
			want:  []string{tft}},
		{name: "the union over live pools on any cluster",
			pools: []novav1alpha1.NovaCompute{
				aggPool("self", "compute-a", false),
				aggPool("b", "compute-a", false, active("n2", "z2")),
				aggPool("c", "compute-b", false, active("n3", "z3"), active("n4", "z2")),
				aggPool("d", "", false, active("n5", "z4")),
			},
			selfNodes: []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			want:      []string{tft, "z1", "z2", "z3", "z4"}},
		{name: "deleting pools are excluded",
			pools: []novav1alpha1.NovaCompute{
				aggPool("self", "", false),
				aggPool("b", "", true, active("n2", "z2")),
			},
			selfNodes: []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			want:      []string{tft, "z1"}},
		{name: "only the nodes held for zones count",
			pools: []novav1alpha1.NovaCompute{aggPool("self", "", false),
				aggPool("b", "", false, zoned("n2", novav1alpha1.NodeDraining, "z2"), zoned("n3", novav1alpha1.NodeConflict, "z3"))},
			selfNodes: []novav1alpha1.NovaComputeNode{zoned("n1", novav1alpha1.NodeReleasing, "z1"), zoned("n4", novav1alpha1.NodePending, "z4")},
			want:      []string{tft, "z4"}},
		{name: "self's stored nodes are replaced by this pass's",
			pools:     []novav1alpha1.NovaCompute{aggPool("self", "", false, active("old", "z-old"))},
			selfNodes: []novav1alpha1.NovaComputeNode{active("n1", "z-new")},
			want:      []string{tft, "z-new"}},
		{name: "self deleting in this pass, not yet stored as such",
			pools:        []novav1alpha1.NovaCompute{aggPool("self", "", false, active("n1", "z1"))},
			selfNodes:    []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			selfDeleting: true},
		{name: "self live in this pass although stored as deleting",
			pools:     []novav1alpha1.NovaCompute{aggPool("self", "", true)},
			selfNodes: []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			want:      []string{tft, "z1"}},
		{name: "the last live pool keeps tenant_filter_tests",
			pools:        []novav1alpha1.NovaCompute{aggPool("self", "", false), aggPool("b", "compute-b", false)},
			selfNodes:    []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			selfDeleting: true,
			want:         []string{tft}},
		{name: "no live pool needs nothing, not even tenant_filter_tests",
			pools:        []novav1alpha1.NovaCompute{aggPool("self", "", true), aggPool("b", "", true, active("n2", "z2"))},
			selfNodes:    []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			selfDeleting: true},
		{name: "another pool's zone shared with self stays required when self deletes",
			pools:        []novav1alpha1.NovaCompute{aggPool("self", "", false), aggPool("b", "", false, active("n2", "z1"))},
			selfNodes:    []novav1alpha1.NovaComputeNode{active("n1", "z1")},
			selfDeleting: true,
			want:         []string{tft, "z1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := tt.pools[0]
			before := make([]novav1alpha1.NovaCompute, len(tt.pools))
			for i := range tt.pools {
				tt.pools[i].DeepCopyInto(&before[i])
			}
			got := RequiredAggregates(tt.pools, &self, tt.selfNodes, tt.selfDeleting)
			names := make([]string, 0, len(got))
			for name, v := range got {
				if !v {
					t.Errorf("required[%s] = false, want only true entries", name)
				}
				names = append(names, name)
			}
			sort.Strings(names)
			want := slices.Clone(tt.want)
			sort.Strings(want)
			if !slices.Equal(names, want) {
				t.Errorf("required = %v, want %v", names, want)
			}
			if !reflect.DeepEqual(tt.pools, before) {
				t.Error("RequiredAggregates changed the pools, want them untouched")
			}
		})
	}
}

func TestDecideReap(t *testing.T) {
	const marker = "openstack/cp-nova"
	required := map[string]bool{"z1": true, novav1alpha1.TenantFilterTestsAggregate: true}
	agg := func(name string, hosts []string, meta map[string]string) openstack.Aggregate {
		return openstack.Aggregate{ID: 1, Name: name, Zone: meta["availability_zone"], Hosts: hosts, Metadata: meta}
	}
	ours := func(extra ...string) map[string]string {
		m := map[string]string{novav1alpha1.AggregateMarkerKey: marker}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	tests := []struct {
		name        string
		agg         openstack.Aggregate
		want        ReapDecision
		wantForeign []string
	}{
		{name: "a required zone aggregate is kept",
			agg: agg("z1", nil, ours("availability_zone", "z1")), want: KeepAggregate},
		{name: "a required tenant_filter_tests is kept",
			agg: agg(novav1alpha1.TenantFilterTestsAggregate, nil, ours()), want: KeepAggregate},
		{name: "a required aggregate with foreign metadata is kept without a warning",
			agg: agg("z1", nil, ours("availability_zone", "z1", "ssd", "true")), want: KeepAggregate},
		{name: "an aggregate without a marker is not ours",
			agg: agg("z9", nil, map[string]string{"availability_zone": "z9"}), want: KeepAggregate},
		{name: "an aggregate without metadata is not ours",
			agg: agg("z9", nil, nil), want: KeepAggregate},
		{name: "an aggregate of another Nova is not ours",
			agg: agg("z9", nil, map[string]string{novav1alpha1.AggregateMarkerKey: "openstack/other-nova", "availability_zone": "z9"}), want: KeepAggregate},
		{name: "an aggregate of a Nova of the same name in another namespace is not ours",
			agg: agg("z9", nil, map[string]string{novav1alpha1.AggregateMarkerKey: "other-ns/cp-nova"}), want: KeepAggregate},
		{name: "an empty marker is not ours",
			agg: agg("z9", nil, map[string]string{novav1alpha1.AggregateMarkerKey: ""}), want: KeepAggregate},
		{name: "ours with hosts is kept",
			agg: agg("z9", []string{"n1"}, ours("availability_zone", "z9")), want: KeepAggregate},
		{name: "ours with hosts and foreign metadata is kept without a warning",
			agg: agg("z9", []string{"n1"}, ours("ssd", "true")), want: KeepAggregate},
		{name: "ours, unneeded, with foreign metadata: kept, keys sorted",
			agg:  agg("z9", nil, ours("availability_zone", "z9", "ssd", "true", "filter_tenant_id", "t1", "gpu", "a100")),
			want: KeepForeignMetadata, wantForeign: []string{"filter_tenant_id", "gpu", "ssd"}},
		{name: "ours, unneeded and empty is deleted",
			agg: agg("z9", nil, ours("availability_zone", "z9")), want: DeleteAggregate},
		{name: "ours without an availability zone is deleted",
			agg: agg("z9", nil, ours()), want: DeleteAggregate},
		{name: "an empty host list is no host",
			agg: agg("z9", []string{}, ours()), want: DeleteAggregate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, foreign := DecideReap(tt.agg, marker, required)
			if got != tt.want {
				t.Errorf("decision = %d, want %d", got, tt.want)
			}
			if !slices.Equal(foreign, tt.wantForeign) {
				t.Errorf("foreign keys = %v, want %v", foreign, tt.wantForeign)
			}
		})
	}
}
