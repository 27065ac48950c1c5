package novacompute

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
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

func TestDeliveredBy(t *testing.T) {
	owned := map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true", childwriter.OwnerKindLabel: "ControlPlane",
		childwriter.OwnerNameLabel: "cp", childwriter.OwnerNamespaceLabel: "openstack"}
	with := func(k, v string) map[string]string {
		l := maps.Clone(owned)
		if v == "" {
			delete(l, k)
		} else {
			l[k] = v
		}
		return l
	}
	tests := []struct {
		name   string
		labels map[string]string
		nova   string
		want   bool
	}{
		{name: "delivered by the Nova's ControlPlane", labels: owned, nova: "cp-nova", want: true},
		{name: "the mirror label alone", labels: map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true"}, nova: "cp-nova"},
		{name: "mirror label false", labels: with(c5c3v1alpha1.ComputeConfigMirrorLabel, "false"), nova: "cp-nova"},
		{name: "no mirror label", labels: with(c5c3v1alpha1.ComputeConfigMirrorLabel, ""), nova: "cp-nova"},
		{name: "another ControlPlane", labels: with(childwriter.OwnerNameLabel, "other"), nova: "cp-nova"},
		{name: "another namespace", labels: with(childwriter.OwnerNamespaceLabel, "team-x"), nova: "cp-nova"},
		{name: "another kind", labels: with(childwriter.OwnerKindLabel, "Nova"), nova: "cp-nova"},
		{name: "a standalone Nova", labels: owned, nova: "cp"},
		{name: "a Nova named only the suffix", labels: with(childwriter.OwnerNameLabel, ""), nova: "-nova"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DeliveredBy(tt.labels, "openstack", tt.nova); got != tt.want {
				t.Errorf("DeliveredBy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestContractVouchedFor(t *testing.T) {
	delivered := map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true", childwriter.OwnerKindLabel: "ControlPlane",
		childwriter.OwnerNameLabel: "cp", childwriter.OwnerNamespaceLabel: "openstack"}
	nova := func(cluster string) *novav1alpha1.Nova {
		n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: "cp-nova", Namespace: "openstack"}}
		if cluster != "" {
			n.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
		}
		return n
	}
	secret := func(labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cp-nova-compute-config", Namespace: "openstack", Labels: labels}}
	}
	remote := pool("p", "cp-nova", "compute-a", false)
	local := pool("p", "cp-nova", "", false)
	tests := []struct {
		name      string
		nova      *novav1alpha1.Nova
		projected bool
		pool      novav1alpha1.NovaCompute
		contract  *corev1.Secret
		want      bool
	}{
		{"a projected Nova's delivered copy", nova(""), true, remote, secret(delivered), true},
		{"a projected Nova's planted copy", nova(""), true, remote, secret(nil), false},
		{"a planted copy with the mirror label alone", nova(""), true,
			remote, secret(map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true"}), false},
		{"a pool beside its Nova", nova(""), true, local, secret(nil), true},
		{"a pool beside a placed Nova", nova("compute-a"), true, remote, secret(nil), true},
		{"a standalone Nova's hand copy", nova(""), false, remote, secret(nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ContractVouchedFor(tt.nova, tt.projected, &tt.pool, tt.contract); got != tt.want {
				t.Errorf("ContractVouchedFor = %v, want %v", got, tt.want)
			}
		})
	}
}
