package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// OVNChassisSpec is the desired state of a OVNChassis.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
type OVNChassisSpec struct {
	// TargetClusterRef places the children on a registered compute cluster.
	// Absent, they are placed on the management cluster. It cannot be added,
	// removed or changed after creation, because the children already exist
	// where it first pointed.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

// OVNChassisStatus is the observed state of a OVNChassis.
type OVNChassisStatus struct {
	anvilmeta.CommonStatus `json:",inline"`
}

// OVNChassis runs Open vSwitch and ovn-controller on the hypervisor nodes of one cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=ovnchassis,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OVNChassis struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec OVNChassisSpec `json:"spec,omitempty"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status OVNChassisStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OVNChassisList is a list of OVNChassis objects.
type OVNChassisList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OVNChassis `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &OVNChassis{}, &OVNChassisList{})
}

// TargetClusterName returns the name of the compute cluster that receives
// the children, or "" when they stay on the management cluster.
func (o *OVNChassis) TargetClusterName() string {
	if o.Spec.TargetClusterRef == nil {
		return ""
	}
	return o.Spec.TargetClusterRef.Name
}
