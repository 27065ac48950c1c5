package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// NovaComputeSpec is the desired state of a NovaCompute.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
type NovaComputeSpec struct {
	// NovaRef names the Nova, in the same namespace, whose contract the
	// pool's nova-compute runs with.
	NovaRef anvilmeta.LocalObjectReference `json:"novaRef"`

	// TargetClusterRef places the children on a registered compute cluster.
	// Absent, they are placed on the management cluster. It cannot be added,
	// removed or changed after creation, because the children already exist
	// where it first pointed.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

// NovaComputeStatus is the observed state of a NovaCompute.
type NovaComputeStatus struct {
	anvilmeta.CommonStatus `json:",inline"`
}

// NovaCompute is a pool of hypervisor nodes on one cluster that run nova-compute for a Nova.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=novacomputes,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NovaCompute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec NovaComputeSpec `json:"spec,omitempty"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status NovaComputeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NovaComputeList is a list of NovaCompute objects.
type NovaComputeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NovaCompute `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &NovaCompute{}, &NovaComputeList{})
}

// TargetClusterName returns the name of the compute cluster that receives
// the children, or "" when they stay on the management cluster.
func (o *NovaCompute) TargetClusterName() string {
	if o.Spec.TargetClusterRef == nil {
		return ""
	}
	return o.Spec.TargetClusterRef.Name
}

// GetConditions returns the status conditions.
func (o *NovaCompute) GetConditions() []metav1.Condition { return o.Status.Conditions }

// SetConditions replaces the status conditions.
func (o *NovaCompute) SetConditions(c []metav1.Condition) { o.Status.Conditions = c }
