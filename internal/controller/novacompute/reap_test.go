package novacompute

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func pool(name, nova, cluster string, deleting bool, finalizers ...string) novav1alpha1.NovaCompute {
	p := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack", Finalizers: finalizers}}
	p.Spec.NovaRef.Name = nova
	if cluster != "" {
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestStillServes(t *testing.T) {
	me := pool("a", "cp-nova", "compute-a", true)
	tests := []struct {
		name   string
		others []novav1alpha1.NovaCompute
		want   bool
	}{
		{name: "alone", others: []novav1alpha1.NovaCompute{me}},
		{name: "a live pool on the same cluster", others: []novav1alpha1.NovaCompute{me, pool("b", "cp-nova", "compute-a", false)}, want: true},
		{name: "a draining pool on the same cluster", others: []novav1alpha1.NovaCompute{me, pool("b", "cp-nova", "compute-a", true, novav1alpha1.ComputeDrainFinalizer)}, want: true},
		{name: "a deleting pool past its drain", others: []novav1alpha1.NovaCompute{me, pool("b", "cp-nova", "compute-a", true)}},
		{name: "a pool on another cluster", others: []novav1alpha1.NovaCompute{me, pool("b", "cp-nova", "compute-b", false)}},
		{name: "a pool of another Nova", others: []novav1alpha1.NovaCompute{me, pool("b", "other-nova", "compute-a", false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stillServes(&me, tt.others); got != tt.want {
				t.Errorf("stillServes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMirrorNames(t *testing.T) {
	got := MirrorNames("controlplane-nova")
	if len(got) != 2 || got[0] != "controlplane-nova-compute-config" || got[1] != "controlplane-nova-hypervisor-operator-auth" {
		t.Errorf("MirrorNames = %v", got)
	}
}
