package meta

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ImageSpec chooses a container image by tag or by digest.
//
// +kubebuilder:validation:XValidation:rule="has(self.tag) != has(self.digest)",message="image: set exactly one of tag or digest"
type ImageSpec struct {
	// Repository is the image without tag or digest, for example
	// ghcr.io/c5c3/nova.
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository"`
	// Tag selects the image by tag.
	// +optional
	Tag string `json:"tag,omitempty"`
	// Digest selects the image by digest, for example sha256:....
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest,omitempty"`
	// PullPolicy is the kubelet's pull policy for the image.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	PullPolicy string `json:"pullPolicy,omitempty"`
}

// Reference is the image as a container references it: repository@digest
// when a digest is set, else repository:tag.
func (i ImageSpec) Reference() string {
	if i.Digest != "" {
		return i.Repository + "@" + i.Digest
	}
	return i.Repository + ":" + i.Tag
}
