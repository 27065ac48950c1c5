package neutronmetadataagent

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// testAgent is the guide's agent, on cluster ("" for the management
// cluster), with plain http and the ControlPlane's copy.
func testAgent(name, cluster string) *neutronv1alpha1.NeutronMetadataAgent {
	a := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
	a.Spec.OpenStackRelease = "2026.1"
	a.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	a.Spec.ChassisRef.Name = "controlplane-compute-chassis"
	a.Spec.NovaMetadata.SharedSecretRef = &neutronv1alpha1.SecretKeyRef{Name: "controlplane-nova-metadata-agent-secret"}
	if cluster != "" {
		a.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	}
	return a
}

// withHTTPS switches an agent to https with a CA bundle.
func withHTTPS(a *neutronv1alpha1.NeutronMetadataAgent) *neutronv1alpha1.NeutronMetadataAgent {
	a.Spec.NovaMetadata.Host = "nova-metadata.example.com"
	a.Spec.NovaMetadata.Port = ptrInt32(443)
	a.Spec.NovaMetadata.Protocol = neutronv1alpha1.ProtocolHTTPS
	a.Spec.NovaMetadata.CABundleSecretRef = &neutronv1alpha1.SecretKeyRef{Name: "nova-metadata-ca"}
	return a
}

func ptrInt32(v int32) *int32 { return &v }

// testChassis is a chassis on cluster that published its client Secret.
func testChassis(cluster string) *ovnv1alpha1.OVNChassis {
	c := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-compute-chassis", Namespace: "openstack"}}
	c.Spec.CentralRef.Name = "controlplane-ovn"
	c.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
	c.Spec.Tolerations = []corev1.Toleration{{Key: "hypervisor", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	c.Status.ClientSecretName = "controlplane-compute-chassis-ovn-client"
	if cluster != "" {
		c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	}
	return c
}

// testCentral is a central on the management cluster that published its
// internal addresses, its client Secret, and, externally reachable, its
// node addresses and a relay.
func testCentral(external bool) *ovnv1alpha1.OVNCentral {
	c := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-ovn", Namespace: "openstack"}}
	c.Status.Southbound.InternalDBAddress = "ssl:10.0.0.2:6642"
	c.Status.RelayAddress = "ssl:10.0.0.9:6642"
	c.Status.ClientSecretName = "controlplane-ovn-client"
	if external {
		c.Spec.Southbound.ExternallyReachable = true
		c.Status.Southbound.DBAddress = "ssl:192.0.2.1:30651"
		c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{ExternallyReachable: true}
		c.Status.RelayDBAddress = "ssl:192.0.2.5:30661"
	}
	return c
}
