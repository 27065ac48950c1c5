package meta

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CommonStatus is embedded in the status of every kind. It carries what every
// reconciler writes on every pass: the conditions and the generation they
// describe.
type CommonStatus struct {
	// ObservedGeneration is the metadata.generation the conditions describe.
	// A value lower than metadata.generation means the newest spec has not
	// been acted on yet.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions describe the state of the object. Every kind reports Ready;
	// the other types are documented per kind.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}
