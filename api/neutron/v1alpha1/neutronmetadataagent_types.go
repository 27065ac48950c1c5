package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// MaxNeutronMetadataAgentNameLength bounds an agent's name: it is the
// app.kubernetes.io/instance label value of every child, and a label value
// may have at most 63 characters.
const MaxNeutronMetadataAgentNameLength = 63

// NeutronMetadataAgentSpec is the desired state of a NeutronMetadataAgent:
// which chassis's nodes run the agent, and how the agent reaches Nova's
// metadata API.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.chassisRef) || (has(self.chassisRef) && self.chassisRef.name == oldSelf.chassisRef.name)",message="chassisRef is immutable"
type NeutronMetadataAgentSpec struct {
	// OpenStackRelease is the release the image carries, for example
	// 2026.1. Anvil admits 2026.1 and later.
	// +kubebuilder:validation:Pattern=`^\d{4}\.[12]$`
	OpenStackRelease string `json:"openStackRelease"`

	// Image is the Neutron image the agent runs. There is no default: the
	// agent must match the Neutron server of the cloud, which Anvil does
	// not know.
	Image anvilmeta.ImageSpec `json:"image"`

	// ChassisRef names the OVNChassis, in the same namespace, whose nodes
	// run the agent. It is fixed at creation: the agent's DaemonSet lives
	// on that chassis's cluster and nodes.
	ChassisRef ChassisReference `json:"chassisRef"`

	// NovaMetadata is how the agent reaches Nova's metadata API.
	// +optional
	NovaMetadata NovaMetadataSpec `json:"novaMetadata,omitempty"`

	// MetadataWorkers is the number of agent worker processes. Absent, it
	// is 4, resolved on every pass and never written back.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MetadataWorkers *int32 `json:"metadataWorkers,omitempty"`

	// Resources of the agent container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// TargetClusterRef places the DaemonSet on a registered compute
	// cluster. Absent, it is placed on the management cluster. It must
	// name the chassis's cluster, and it cannot be added, removed or
	// changed after creation, because the children already exist where it
	// first pointed.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

// ChassisReference names an OVNChassis in the agent's namespace.
type ChassisReference struct {
	// Name of the OVNChassis.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Protocols the agent may use towards Nova's metadata API.
const (
	// ProtocolHTTP is plain http, the default.
	ProtocolHTTP = "http"
	// ProtocolHTTPS is http over TLS; only it may carry a CA bundle.
	ProtocolHTTPS = "https"
)

// NovaMetadataSpec is how the agent reaches Nova's metadata API. Every
// default is resolved in code on each pass, so the stored spec is the one
// the user wrote.
//
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleSecretRef) || (has(self.protocol) && self.protocol == 'https')",message="caBundleSecretRef requires protocol https: the CA bundle verifies the metadata API's certificate, and plain http has none"
type NovaMetadataSpec struct {
	// Host is the metadata API's host name or IP address, without scheme,
	// port or path. Empty leaves it to the agent's own default.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host,omitempty"`

	// Port is the metadata API's port. Absent, it is 8775.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// Protocol is http or https. Absent, it is http.
	// +optional
	// +kubebuilder:validation:Enum=http;https
	Protocol string `json:"protocol,omitempty"`

	// CABundleSecretRef names the Secret, on the agent's cluster, with the
	// PEM bundle that verifies the metadata API's certificate. Its key
	// defaults to ca.crt. Only with protocol https.
	// +optional
	CABundleSecretRef *SecretKeyRef `json:"caBundleSecretRef,omitempty"`

	// SharedSecretRef names the Secret, on the agent's cluster, with the
	// secret the agent signs instance IDs with; Nova checks the signature
	// with the same value. Its key defaults to shared_secret. The value
	// reaches the agent as an environment variable, never in a ConfigMap.
	// +optional
	SharedSecretRef *SecretKeyRef `json:"sharedSecretRef,omitempty"`
}

// SecretKeyRef names a key of a Secret in the agent's namespace on the
// agent's cluster. An empty key means the default of the field that holds
// it.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	Key string `json:"key,omitempty"`
}

// NeutronMetadataAgentStatus is the observed state of a NeutronMetadataAgent.
type NeutronMetadataAgentStatus struct {
	anvilmeta.CommonStatus `json:",inline"`

	// InstalledImage is the image reference the agent's DaemonSet last
	// became ready on, on every selected node.
	// +optional
	InstalledImage string `json:"installedImage,omitempty"`

	// DesiredNumberScheduled is the agent DaemonSet's; 0 without one.
	// +optional
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled,omitempty"`

	// NumberReady is the agent DaemonSet's; 0 without one.
	// +optional
	NumberReady int32 `json:"numberReady,omitempty"`
}

// NeutronMetadataAgent runs the Neutron OVN metadata agent on the nodes of one OVNChassis.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=neutronmetadataagents,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Chassis",type=string,JSONPath=`.spec.chassisRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NeutronMetadataAgent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec NeutronMetadataAgentSpec `json:"spec"`

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
