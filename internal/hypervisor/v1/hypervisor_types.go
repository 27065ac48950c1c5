// Package v1 is a minimal stand-in for the hypervisor operator's Hypervisor
// kind (kvm.cloud.sap/v1): only the fields a NovaCompute pool writes and
// reads. The real CRD comes with openstack-hypervisor-operator; tests and
// the devstack install this one on compute clusters instead.
//
// +kubebuilder:object:generate=true
// +groupName=kvm.cloud.sap
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is kvm.cloud.sap/v1.
var GroupVersion = schema.GroupVersion{Group: "kvm.cloud.sap", Version: "v1"}

// AddToScheme adds the Hypervisor kinds to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Hypervisor{}, &HypervisorList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// HypervisorSpec is the part of the hypervisor operator's spec a pool
// writes.
type HypervisorSpec struct {
	// CustomTraits are the custom Placement traits the hypervisor operator
	// applies to the node's resource provider.
	// +optional
	CustomTraits []string `json:"customTraits,omitempty"`
}

// HypervisorStatus is the part of the status a pool reads.
type HypervisorStatus struct {
	// Traits are the traits the hypervisor operator applied.
	// +optional
	Traits []string `json:"traits,omitempty"`
}

// Hypervisor is one hypervisor node, named after its Node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hypervisors,scope=Cluster,shortName=hv
type Hypervisor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec HypervisorSpec `json:"spec,omitempty"`
	// Status is the observed state.
	// +optional
	Status HypervisorStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HypervisorList is a list of Hypervisors.
type HypervisorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Hypervisor `json:"items"`
}
