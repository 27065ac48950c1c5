package workloadpolicy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// Every privileged kind goes through the same checks, each refusal by the
// field a user fixes; the defaults of each kind pass.
func TestCheckEveryPrivilegedKind(t *testing.T) {
	foreign := &anvilmeta.ImageSpec{Repository: "registry.invalid/evil/ovn", Tag: "1"}
	everything := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	controlPlane := map[string]string{"node-role.kubernetes.io/control-plane": ""}
	chassis := func(mut func(*ovnv1alpha1.OVNChassis)) *ovnv1alpha1.OVNChassis {
		c := &ovnv1alpha1.OVNChassis{}
		c.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
		if mut != nil {
			mut(c)
		}
		return c
	}
	agent := func(repo string) *neutronv1alpha1.NeutronMetadataAgent {
		a := &neutronv1alpha1.NeutronMetadataAgent{}
		a.Spec.Image = anvilmeta.ImageSpec{Repository: repo, Tag: "2026.1"}
		return a
	}
	pool := func(mut func(*novav1alpha1.NovaCompute)) *novav1alpha1.NovaCompute {
		p := &novav1alpha1.NovaCompute{}
		p.Spec.NodeSelector = map[string]string{"pool": "a"}
		if mut != nil {
			mut(p)
		}
		return p
	}
	var p Policy
	pinned := Policy{RequireDigests: true}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		got  []string
		want []string // refused fields, in order; none means allowed
	}{
		{"chassis with defaults", fields(p.CheckOVNChassis(chassis(nil))), nil},
		{"chassis from a foreign image tolerating everything", fields(p.CheckOVNChassis(chassis(func(c *ovnv1alpha1.OVNChassis) {
			c.Spec.Image, c.Spec.Tolerations = foreign, everything
		}))), []string{"spec.image.repository", "spec.tolerations[0]"}},
		{"chassis default image outside a custom list", fields(Policy{ImageRepositories: []string{"registry.local/"}}.CheckOVNChassis(chassis(nil))), []string{"spec.image"}},
		{"chassis on control-plane nodes", fields(p.CheckOVNChassis(chassis(func(c *ovnv1alpha1.OVNChassis) {
			c.Spec.NodeSelector = controlPlane
		}))), []string{"spec.nodeSelector[node-role.kubernetes.io/control-plane]"}},
		{"gateways on legacy master nodes", fields(p.CheckOVNChassis(chassis(func(c *ovnv1alpha1.OVNChassis) {
			c.Spec.Gateway = &ovnv1alpha1.ChassisGatewaySpec{NodeSelector: map[string]string{"node-role.kubernetes.io/master": "true"}}
		}))), []string{"spec.gateway.nodeSelector[node-role.kubernetes.io/master]"}},
		{"agent from Anvil's repository", fields(p.CheckNeutronMetadataAgent(agent("ghcr.io/c5c3/neutron"))), nil},
		{"agent from a foreign image", fields(p.CheckNeutronMetadataAgent(agent("registry.invalid/evil/neutron"))), []string{"spec.image.repository"}},
		{"pool on control-plane nodes", fields(p.CheckNovaCompute(pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.NodeSelector = controlPlane
		}))), []string{"spec.nodeSelector[node-role.kubernetes.io/control-plane]"}},
		{"a hypervisor label is no control-plane label", fields(p.CheckNovaCompute(pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/compute": ""}
		}))), nil},
		// --require-image-digests: a tag, the defaults included, is refused.
		{"digests required: chassis with the default image", fields(pinned.CheckOVNChassis(chassis(nil))), []string{"spec.image"}},
		{"digests required: pool with the default image", fields(pinned.CheckNovaCompute(pool(nil))), []string{"spec.image"}},
		{"digests required: agent by tag", fields(pinned.CheckNeutronMetadataAgent(agent("ghcr.io/c5c3/neutron"))), []string{"spec.image.digest"}},
		{"digests required: chassis by digest", fields(pinned.CheckOVNChassis(chassis(func(c *ovnv1alpha1.OVNChassis) {
			c.Spec.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/ovn", Digest: digest}
		}))), nil},
		{"digests required: pool by tag and digest", fields(pinned.CheckNovaCompute(pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova-compute", Tag: "2026.1", Digest: digest}
		}))), nil},
		{"digests required: a foreign image by digest is still foreign", fields(pinned.CheckOVNChassis(chassis(func(c *ovnv1alpha1.OVNChassis) {
			c.Spec.Image = &anvilmeta.ImageSpec{Repository: "registry.invalid/evil/ovn", Digest: digest}
		}))), []string{"spec.image.repository"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("refused %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// fields returns the field of each refusal, in order.
func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
