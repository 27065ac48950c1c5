package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// ControlPlaneSpec is the desired state of a ControlPlane.
type ControlPlaneSpec struct{}

// ControlPlaneStatus is the observed state of a ControlPlane.
type ControlPlaneStatus struct {
	anvilmeta.CommonStatus `json:",inline"`
}

// ControlPlane declares one OpenStack cloud. Anvil projects the services it runs (Nova, OVN) as child resources and delivers what compute clusters need to join it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=controlplanes,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec ControlPlaneSpec `json:"spec,omitempty"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status ControlPlaneStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ControlPlaneList is a list of ControlPlane objects.
type ControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControlPlane `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &ControlPlane{}, &ControlPlaneList{})
}
