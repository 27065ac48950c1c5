package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// NeutronMetadataAgentSpec is the desired state of a NeutronMetadataAgent.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
type NeutronMetadataAgentSpec struct {
	// TargetClusterRef places the children on a registered compute cluster.
	// Absent, they are placed on the management cluster. It cannot be added,
	// removed or changed after creation, because the children already exist
	// where it first pointed.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

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

// TargetClusterName returns the name of the compute cluster that receives
// the children, or "" when they stay on the management cluster.
func (o *NeutronMetadataAgent) TargetClusterName() string {
	if o.Spec.TargetClusterRef == nil {
		return ""
	}
	return o.Spec.TargetClusterRef.Name
}
