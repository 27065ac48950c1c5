package workloadpolicy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// spec is the root of every path below.
var spec = field.NewPath("spec")

// CheckNovaCompute returns every way a pool breaks the policy.
func (p Policy) CheckNovaCompute(pool *novav1alpha1.NovaCompute) field.ErrorList {
	return p.Check(NovaComputeWorkload(pool))
}

// CheckOVNChassis returns every way a chassis breaks the policy.
func (p Policy) CheckOVNChassis(ch *ovnv1alpha1.OVNChassis) field.ErrorList {
	return p.Check(OVNChassisWorkload(ch))
}

// CheckNeutronMetadataAgent returns every way an agent breaks the policy.
func (p Policy) CheckNeutronMetadataAgent(a *neutronv1alpha1.NeutronMetadataAgent) field.ErrorList {
	return p.Check(NeutronMetadataAgentWorkload(a))
}

// NovaComputeWorkload is what a pool runs: nova-compute and libvirt from
// its image on the nodes it selects.
func NovaComputeWorkload(pool *novav1alpha1.NovaCompute) Workload {
	img := Image{Path: spec.Child("image"), Repository: novav1alpha1.DefaultComputeImageRepository}
	if pool.Spec.Image != nil {
		img = specImage(pool.Spec.Image.Repository, pool.Spec.Image.Digest)
	}
	return Workload{
		Kind:            "a pool",
		Images:          []Image{img},
		Tolerations:     pool.Spec.Tolerations,
		TolerationsPath: spec.Child("tolerations"),
		NodeSelectors:   []NodeSelector{{Path: spec.Child("nodeSelector"), Labels: pool.Spec.NodeSelector}},
	}
}

// OVNChassisWorkload is what a chassis runs: Open vSwitch, ovn-controller
// and the maintenance Jobs, all from one image, on the chassis nodes and
// its gateways.
func OVNChassisWorkload(ch *ovnv1alpha1.OVNChassis) Workload {
	img := Image{Path: spec.Child("image"), Repository: ovnv1alpha1.DefaultImageRepository}
	if ch.Spec.Image != nil {
		img = specImage(ch.Spec.Image.Repository, ch.Spec.Image.Digest)
	}
	selectors := []NodeSelector{{Path: spec.Child("nodeSelector"), Labels: ch.Spec.NodeSelector}}
	if gw := ch.Spec.Gateway; gw != nil {
		selectors = append(selectors, NodeSelector{Path: spec.Child("gateway", "nodeSelector"), Labels: gw.NodeSelector})
	}
	return Workload{
		Kind:            "a chassis",
		Images:          []Image{img},
		Tolerations:     ch.Spec.Tolerations,
		TolerationsPath: spec.Child("tolerations"),
		NodeSelectors:   selectors,
	}
}

// NeutronMetadataAgentWorkload is what an agent runs: its image only. Its
// pods take the nodes and tolerations of its chassis, which the chassis's
// own check holds.
func NeutronMetadataAgentWorkload(a *neutronv1alpha1.NeutronMetadataAgent) Workload {
	return Workload{
		Kind:   "a metadata agent",
		Images: []Image{specImage(a.Spec.Image.Repository, a.Spec.Image.Digest)},
	}
}

// specImage is an image the object's spec.image sets.
func specImage(repository, digest string) Image {
	return Image{Path: spec.Child("image", "repository"), Repository: repository, Digest: digest, DigestPath: spec.Child("image", "digest")}
}
