package meta

// TargetClusterRef names the compute cluster that receives an object's
// children. The name is that of a registration Secret in the operator's
// clusters namespace on the management cluster.
type TargetClusterRef struct {
	// Name of the registration Secret, and so of the compute cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetClusterRef is immutable"
	Name string `json:"name"`
}
