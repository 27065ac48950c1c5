package controlplane

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

func TestMirrorTargetsAndDrainingClusters(t *testing.T) {
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: "cp-nova", Namespace: "openstack"}}
	pool := func(name, novaName, cluster string, deleting bool) novav1alpha1.NovaCompute {
		p := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
		p.Spec.NovaRef.Name = novaName
		if cluster != "" {
			p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
		}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	tests := []struct {
		name              string
		pools             []novav1alpha1.NovaCompute
		targets, draining []string
	}{
		{name: "no pools"},
		{name: "two pools on one cluster, one on another, sorted",
			pools:   []novav1alpha1.NovaCompute{pool("b", "cp-nova", "compute-b", false), pool("a1", "cp-nova", "compute-a", false), pool("a2", "cp-nova", "compute-a", false)},
			targets: []string{"compute-a", "compute-b"}},
		{name: "a pool beside the Nova needs no copy",
			pools: []novav1alpha1.NovaCompute{pool("local", "cp-nova", "", false), pool("local-going", "cp-nova", "", true)}},
		{name: "another Nova's pools are not this one's",
			pools: []novav1alpha1.NovaCompute{pool("x", "other-nova", "compute-x", false), pool("y", "other-nova", "compute-y", true)}},
		{name: "a draining pool is no target, and its cluster keeps its copies",
			pools:    []novav1alpha1.NovaCompute{pool("a", "cp-nova", "compute-a", false), pool("going", "cp-nova", "compute-c", true)},
			targets:  []string{"compute-a"},
			draining: []string{"compute-c"}},
		{name: "a cluster with a live and a draining pool is both",
			pools:    []novav1alpha1.NovaCompute{pool("a", "cp-nova", "compute-a", false), pool("a-going", "cp-nova", "compute-a", true)},
			targets:  []string{"compute-a"},
			draining: []string{"compute-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MirrorTargets(nova, tt.pools); !slices.Equal(got, tt.targets) && len(got)+len(tt.targets) > 0 {
				t.Errorf("targets = %v, want %v", got, tt.targets)
			}
			if got := DrainingClusters(nova, tt.pools); !slices.Equal(got, tt.draining) && len(got)+len(tt.draining) > 0 {
				t.Errorf("draining = %v, want %v", got, tt.draining)
			}
		})
	}
}

func TestRecordDelivery(t *testing.T) {
	secret := func(name string, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}, Data: map[string][]byte{"k": []byte(value)}}
	}
	var list []c5c3v1alpha1.DeliveredCopy
	list = RecordDelivery(list, "compute-b", secret("m", "1"))
	list = RecordDelivery(list, "compute-a", secret("m", "1"))
	list = RecordDelivery(list, "compute-a", secret("a", "1"))
	order := func() []string {
		var out []string
		for _, d := range list {
			out = append(out, d.Cluster+"/"+d.Name)
		}
		return out
	}
	if got, want := order(), []string{"compute-a/a", "compute-a/m", "compute-b/m"}; !slices.Equal(got, want) {
		t.Fatalf("inventory = %v, want %v, sorted", got, want)
	}
	// A rewrite replaces the entry and its hash; it adds none.
	list = RecordDelivery(list, "compute-a", secret("m", "2"))
	if len(list) != 3 || list[1].Hash != novaconfig.Hash(map[string][]byte{"k": []byte("2")}) || list[1].Kind != "Secret" {
		t.Errorf("after a rewrite: %+v", list)
	}
	if list[1].Hash == list[2].Hash {
		t.Error("two different values share a hash")
	}
}

func TestStaleDeliveries(t *testing.T) {
	entry := func(cluster, name string) c5c3v1alpha1.DeliveredCopy {
		return c5c3v1alpha1.DeliveredCopy{Cluster: cluster, Kind: "Secret", Namespace: "openstack", Name: name, Hash: "h"}
	}
	list := []c5c3v1alpha1.DeliveredCopy{entry("compute-a", "m"), entry("compute-a", "auth"), entry("compute-b", "m")}
	tests := []struct {
		name   string
		wanted map[copyKey]bool
		stale  []string
	}{
		{name: "everything still delivered", stale: nil, wanted: map[copyKey]bool{
			{"compute-a", "openstack", "m"}: true, {"compute-a", "openstack", "auth"}: true, {"compute-b", "openstack", "m"}: true}},
		{name: "a cluster left", stale: []string{"compute-b/m"}, wanted: map[copyKey]bool{
			{"compute-a", "openstack", "m"}: true, {"compute-a", "openstack", "auth"}: true}},
		{name: "one copy withdrawn", stale: []string{"compute-a/auth"}, wanted: map[copyKey]bool{
			{"compute-a", "openstack", "m"}: true, {"compute-b", "openstack", "m"}: true}},
		{name: "another namespace's copy is not the same", stale: []string{"compute-a/m", "compute-a/auth", "compute-b/m"}, wanted: map[copyKey]bool{
			{"compute-a", "other", "m"}: true}},
		{name: "nothing delivered any more", stale: []string{"compute-a/m", "compute-a/auth", "compute-b/m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range StaleDeliveries(list, tt.wanted) {
				got = append(got, d.Cluster+"/"+d.Name)
			}
			if !slices.Equal(got, tt.stale) {
				t.Errorf("stale = %v, want %v", got, tt.stale)
			}
		})
	}
	if got := forgetDelivery(slices.Clone(list), copyKey{"compute-a", "openstack", "auth"}); len(got) != 2 || got[0].Name != "m" || got[1].Cluster != "compute-b" {
		t.Errorf("forgetDelivery = %+v", got)
	}
}
