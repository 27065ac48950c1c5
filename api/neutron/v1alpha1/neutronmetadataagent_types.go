package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// NeutronMetadataAgentSpec is the desired state of a NeutronMetadataAgent.
type NeutronMetadataAgentSpec struct{}

// NeutronMetadataAgentStatus is the observed state of a NeutronMetadataAgent.
type NeutronMetadataAgentStatus struct {
	anvilmeta.CommonStatus `json:",inline"`
}

// NeutronMetadataAgent runs the Neutron metadata agent on the hypervisor nodes of one cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=neutronmetadataagents,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NeutronMetadataAgent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec NeutronMetadataAgentSpec `json:"spec,omitempty"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status NeutronMetadataAgentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NeutronMetadataAgentList is a list of NeutronMetadataAgent objects.
type NeutronMetadataAgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NeutronMetadataAgent `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &NeutronMetadataAgent{}, &NeutronMetadataAgentList{})
}
