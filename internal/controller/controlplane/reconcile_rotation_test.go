package controlplane

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestDecideRotation(t *testing.T) {
	const old, cur = "0123456789abcdef-old", "fedcba9876543210-new"
	pool := func(name, cluster, rolled string) novav1alpha1.NovaCompute {
		p := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
		p.Spec.NovaRef.Name = "cp-nova"
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
		p.Status.RolledOutContractHash = rolled
		return p
	}
	deleting := pool("gone", "a", old)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	otherNova := pool("other", "a", old)
	otherNova.Spec.NovaRef.Name = "x-nova"

	tests := []struct {
		name        string
		targets     []string
		hashes      map[string]string
		pools       []novav1alpha1.NovaCompute
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "no compute cluster", wantStatus: metav1.ConditionTrue, wantReason: c5c3v1alpha1.NoComputeClustersReason,
			wantMessage: "no pool of the Nova runs on a compute cluster"},
		{name: "every pool on its cluster's hash", targets: []string{"a", "b"}, hashes: map[string]string{"a": cur, "b": cur},
			pools:      []novav1alpha1.NovaCompute{pool("p-a", "a", cur), pool("p-b", "b", cur)},
			wantStatus: metav1.ConditionTrue, wantReason: c5c3v1alpha1.RotationCompleteReason, wantMessage: "2 of 2 clusters on fedcba987654"},
		{name: "rotation just written: nobody rolled out", targets: []string{"a", "b"}, hashes: map[string]string{"a": cur, "b": cur},
			pools:      []novav1alpha1.NovaCompute{pool("p-a", "a", old), pool("p-b", "b", old)},
			wantStatus: metav1.ConditionFalse, wantReason: c5c3v1alpha1.RotationInProgressReason,
			wantMessage: "0 of 2 clusters on fedcba987654; behind: a (pools rolling out: p-a); b (pools rolling out: p-b)"},
		{name: "one of two pools on a cluster is behind", targets: []string{"a"}, hashes: map[string]string{"a": cur},
			pools:      []novav1alpha1.NovaCompute{pool("p-2", "a", ""), pool("p-1", "a", cur)},
			wantStatus: metav1.ConditionFalse, wantReason: c5c3v1alpha1.RotationInProgressReason,
			wantMessage: "0 of 1 clusters on fedcba987654; behind: a (pools rolling out: p-2)"},
		{name: "a cluster whose mirror was not written", targets: []string{"a", "b"}, hashes: map[string]string{"a": cur},
			pools:      []novav1alpha1.NovaCompute{pool("p-a", "a", cur), pool("p-b", "b", cur)},
			wantStatus: metav1.ConditionFalse, wantReason: c5c3v1alpha1.RotationInProgressReason,
			wantMessage: "1 of 2 clusters on fedcba987654; behind: b (its mirror is not written)"},
		{name: "per-cluster contracts", targets: []string{"a", "b"}, hashes: map[string]string{"a": cur, "b": old},
			pools:      []novav1alpha1.NovaCompute{pool("p-a", "a", cur), pool("p-b", "b", old)},
			wantStatus: metav1.ConditionTrue, wantReason: c5c3v1alpha1.RotationCompleteReason, wantMessage: "2 of 2 clusters on their current contract"},
		{name: "deleting pools and other Novas' pools do not count", targets: []string{"a"}, hashes: map[string]string{"a": cur},
			pools:      []novav1alpha1.NovaCompute{pool("p-a", "a", cur), deleting, otherNova},
			wantStatus: metav1.ConditionTrue, wantReason: c5c3v1alpha1.RotationCompleteReason, wantMessage: "1 of 1 clusters on fedcba987654"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideRotation(tt.targets, tt.hashes, tt.pools, "cp-nova")
			if got.Status != tt.wantStatus || got.Reason != tt.wantReason || got.Message != tt.wantMessage {
				t.Errorf("got %s %s %q, want %s %s %q", got.Status, got.Reason, got.Message, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
			if len(got.Clusters) != len(tt.targets) {
				t.Fatalf("clusters = %+v, want one per target", got.Clusters)
			}
			for i, c := range got.Clusters {
				if c.Name != tt.targets[i] || c.ContractHash != tt.hashes[c.Name] {
					t.Errorf("cluster %d = %+v", i, c)
				}
				for j := 1; j < len(c.Pools); j++ {
					if c.Pools[j-1].Name >= c.Pools[j].Name {
						t.Errorf("pools of %s are not sorted: %+v", c.Name, c.Pools)
					}
				}
			}
		})
	}
}
