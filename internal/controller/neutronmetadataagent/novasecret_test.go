package neutronmetadataagent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
)

// servingCP is a ControlPlane in ns "openstack" that runs a Nova and whose
// Neutron runs on central; change adjusts it.
func servingCP(name, central string, change func(*c5c3v1alpha1.ControlPlane)) c5c3v1alpha1.ControlPlane {
	cp := c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
	cp.Spec.Services.Nova = &c5c3v1alpha1.NovaServiceSpec{}
	cp.Spec.Services.Neutron = &c5c3v1alpha1.NeutronServiceSpec{
		OVN: &c5c3v1alpha1.NeutronOVNSpec{CentralRef: c5c3v1alpha1.OVNCentralReference{Name: central}},
	}
	if change != nil {
		change(&cp)
	}
	return cp
}

func TestServingControlPlane(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		cps  []c5c3v1alpha1.ControlPlane
		want string
	}{
		{name: "none", want: ""},
		{name: "the one on the central", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "other", nil), servingCP("b", "ovn", nil)}, want: "b"},
		{name: "an explicit namespace that is the agent's", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "ovn", func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.OVN.CentralRef.Namespace = "openstack"
		})}, want: "a"},
		{name: "a central of another namespace", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "ovn", func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.OVN.CentralRef.Namespace = "elsewhere"
		})}, want: ""},
		{name: "no Nova Anvil runs", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "ovn", func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova = nil
		})}, want: ""},
		{name: "no OVN block", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "ovn", func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.OVN = nil
		})}, want: ""},
		{name: "being deleted", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "ovn", func(cp *c5c3v1alpha1.ControlPlane) {
			cp.DeletionTimestamp = &now
		})}, want: ""},
		{name: "two claim the central, so neither says", cps: []c5c3v1alpha1.ControlPlane{servingCP("a", "ovn", nil), servingCP("b", "ovn", nil)}, want: ""},
	} {
		got := ServingControlPlane(tc.cps, "openstack", "ovn")
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want {
			t.Errorf("%s: ServingControlPlane = %q, want %q", tc.name, name, tc.want)
		}
	}
}
