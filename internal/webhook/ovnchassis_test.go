package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// validChassis is a chassis with every block set to a value the rules
// admit, so that each case breaks exactly one thing.
func validChassis() *ovnv1alpha1.OVNChassis {
	ch := &ovnv1alpha1.OVNChassis{}
	ch.Name, ch.Namespace = "ovn-compute-a", "openstack"
	s := &ch.Spec
	s.CentralRef.Name = "ovn"
	s.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
	s.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/compute", Operator: corev1.TolerationOpExists}}
	s.Gateway = &ovnv1alpha1.ChassisGatewaySpec{NodeSelector: map[string]string{"openstack.c5c3.io/gateway": "true"}}
	s.BridgeMappings = []ovnv1alpha1.BridgeMapping{{PhysicalNetwork: "physnet1", Bridge: "br-ex"}, {PhysicalNetwork: "provider-2", Bridge: "br_prov.2"}}
	s.EncapType = ovnv1alpha1.EncapVXLAN
	s.UpdateStrategy = ovnv1alpha1.ChassisUpdateStrategy{Type: ovnv1alpha1.RollingUpdateStrategy, MaxUnavailable: ptr.To[int32](2)}
	s.RemoteProbeIntervalMs = ptr.To[int32](30000)
	s.OVS.RevalidatorThreads = ptr.To[int32](4)
	s.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/ovn", Digest: "sha256:" + strings.Repeat("a", 64)}
	s.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	return ch
}

// TestValidateOVNChassis has one case per admission rule of a chassis, on
// create.
func TestValidateOVNChassis(t *testing.T) {
	bridge := func(physnet, br string) func(*ovnv1alpha1.OVNChassis) {
		return func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.BridgeMappings = append(ch.Spec.BridgeMappings, ovnv1alpha1.BridgeMapping{PhysicalNetwork: physnet, Bridge: br})
		}
	}
	tests := []struct {
		name   string
		mutate func(*ovnv1alpha1.OVNChassis)
		want   []want // nil: admitted
	}{
		{name: "every block set", mutate: func(*ovnv1alpha1.OVNChassis) {}},
		{name: "only the required fields", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec = ovnv1alpha1.OVNChassisSpec{CentralRef: ch.Spec.CentralRef, NodeSelector: ch.Spec.NodeSelector}
		}},
		{name: "name of 42 characters", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Name = strings.Repeat("c", 42) }},
		{name: "name of 43 characters", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Name = strings.Repeat("c", 43) },
			want: []want{{"metadata.name", field.ErrorTypeInvalid, "name must be at most 42 characters: the Job {name}-chassis-del-<8 hex> may have at most 63"}}},
		{name: "no central", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.CentralRef.Name = "" },
			want: []want{{"spec.centralRef.name", field.ErrorTypeRequired, "centralRef.name must be set"}}},
		{name: "empty node selector", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.NodeSelector = nil },
			want: []want{{"spec.nodeSelector", field.ErrorTypeRequired, msgSelectorEmpty}}},
		{name: "node selector value not a label value", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.NodeSelector["zone"] = "a b" },
			want: []want{{"spec.nodeSelector[zone]", field.ErrorTypeInvalid, "a valid label"}}},
		{name: "empty gateway selector", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.Gateway.NodeSelector = map[string]string{} },
			want: []want{{"spec.gateway.nodeSelector", field.ErrorTypeRequired, msgSelectorEmpty}}},
		{name: "physical network not a DNS label", mutate: bridge("Phys_Net", "br-x"),
			want: []want{{"spec.bridgeMappings[2].physicalNetwork", field.ErrorTypeInvalid, "a lowercase RFC 1123 label"}}},
		{name: "physical network mapped twice", mutate: bridge("physnet1", "br-x"),
			want: []want{{"spec.bridgeMappings[2].physicalNetwork", field.ErrorTypeDuplicate, ""}}},
		{name: "bridge name of 16 characters", mutate: bridge("physnet3", strings.Repeat("b", 16)),
			want: []want{{"spec.bridgeMappings[2].bridge", field.ErrorTypeInvalid, msgBridgeName}}},
		{name: "bridge name with a slash", mutate: bridge("physnet3", "br/ex"),
			want: []want{{"spec.bridgeMappings[2].bridge", field.ErrorTypeInvalid, msgBridgeName}}},
		{name: "bridge mapped twice", mutate: bridge("physnet3", "br-ex"),
			want: []want{{"spec.bridgeMappings[2].bridge", field.ErrorTypeInvalid, `bridge is already mapped to physical network "physnet1"`}}},
		{name: "encapsulation stt", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.EncapType = "stt" },
			want: []want{{"spec.encapType", field.ErrorTypeNotSupported, ""}}},
		{name: "update strategy Recreate", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.UpdateStrategy.Type = "Recreate" },
			want: []want{{"spec.updateStrategy.type", field.ErrorTypeNotSupported, ""}}},
		{name: "maxUnavailable 0", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.UpdateStrategy.MaxUnavailable = ptr.To[int32](0) },
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, msgMaxUnavailZero}}},
		{name: "maxUnavailable with OnDelete", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.UpdateStrategy.Type = ovnv1alpha1.OnDeleteStrategy },
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, msgMaxUnavailOnDelete}}},
		{name: "OnDelete without maxUnavailable", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.UpdateStrategy = ovnv1alpha1.ChassisUpdateStrategy{Type: ovnv1alpha1.OnDeleteStrategy}
		}},
		{name: "negative probe interval", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.RemoteProbeIntervalMs = ptr.To[int32](-1) },
			want: []want{{"spec.remoteProbeIntervalMs", field.ErrorTypeInvalid, "must be at least 0"}}},
		{name: "no revalidator threads", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.OVS.RevalidatorThreads = ptr.To[int32](0) },
			want: []want{{"spec.ovs.revalidatorThreads", field.ErrorTypeInvalid, "must be at least 1"}}},
		{name: "image without tag or digest", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.Image.Digest = "" },
			want: []want{{"spec.image", field.ErrorTypeInvalid, msgTagXorDigest}}},
		{name: "empty target cluster name", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.TargetClusterRef.Name = "" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeRequired, msgTargetName}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := validChassis()
			tt.mutate(ch)
			assertErrors(t, ValidateOVNChassis(ch, nil), tt.want)
		})
	}
}

// TestValidateOVNChassisUpdate has one case per rule that compares with the
// stored chassis.
func TestValidateOVNChassisUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*ovnv1alpha1.OVNChassis)
		mutate func(*ovnv1alpha1.OVNChassis)
		want   []want
	}{
		{name: "selectors, mappings and strategy change", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.NodeSelector = map[string]string{"pool": "b"}
			ch.Spec.Gateway = nil
			ch.Spec.BridgeMappings = nil
			ch.Spec.UpdateStrategy = ovnv1alpha1.ChassisUpdateStrategy{Type: ovnv1alpha1.OnDeleteStrategy}
		}},
		{name: "centralRef renamed", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.CentralRef.Name = "ovn-2" },
			want: []want{{"spec.centralRef.name", field.ErrorTypeInvalid, msgCentralRefImmutable}}},
		{name: "targetClusterRef added", old: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.TargetClusterRef = nil }, mutate: func(*ovnv1alpha1.OVNChassis) {},
			want: []want{{"spec.targetClusterRef", field.ErrorTypeForbidden, msgTargetImmutable}}},
		{name: "an over-long name is not refused again", old: func(ch *ovnv1alpha1.OVNChassis) { ch.Name = strings.Repeat("c", 43) },
			mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Name = strings.Repeat("c", 43) }},
		{name: "a deleting chassis with an unchanged invalid spec", old: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.NodeSelector = nil },
			mutate: func(ch *ovnv1alpha1.OVNChassis) {
				ch.Spec.NodeSelector = nil
				ch.DeletionTimestamp = &metav1.Time{}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validChassis()
			if tt.old != nil {
				tt.old(old)
			}
			ch := validChassis()
			tt.mutate(ch)
			assertErrors(t, ValidateOVNChassis(ch, old), tt.want)
		})
	}
}
