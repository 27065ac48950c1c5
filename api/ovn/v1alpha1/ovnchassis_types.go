package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// MaxOVNChassisNameLength bounds a chassis's name: its longest child is
// the Job {name}-chassis-del-<8 hex>, and a Job name may have at most 63
// characters, since it becomes a label value of the Job's pods.
const MaxOVNChassisNameLength = 42

// OVNChassisSpec is the desired state of an OVNChassis: which nodes of which
// cluster become OVN chassis of which central, and how.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
// +kubebuilder:validation:XValidation:rule="self.centralRef.name == oldSelf.centralRef.name",message="centralRef is immutable"
type OVNChassisSpec struct {
	// CentralRef names the OVNCentral, in the same namespace, whose
	// databases the chassis connect to. It is fixed at creation: the
	// chassis are registered in that central's southbound database.
	CentralRef CentralReference `json:"centralRef"`

	// NodeSelector selects the chassis nodes by label; it is copied onto
	// both DaemonSets. A node that stops matching is removed from the
	// southbound database.
	// +kubebuilder:validation:MinProperties=1
	NodeSelector map[string]string `json:"nodeSelector"`

	// Tolerations are copied to the pods of both DaemonSets.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Gateway makes the selected nodes that also match its selector
	// gateway chassis. Absent, no node is a gateway.
	// +optional
	Gateway *ChassisGatewaySpec `json:"gateway,omitempty"`

	// BridgeMappings map provider networks to OVS bridges on every node.
	// +optional
	// +listType=map
	// +listMapKey=physicalNetwork
	BridgeMappings []BridgeMapping `json:"bridgeMappings,omitempty"`

	// EncapType is the tunnel encapsulation between chassis.
	// +optional
	// +kubebuilder:validation:Enum=geneve;vxlan
	// +kubebuilder:default=geneve
	EncapType string `json:"encapType,omitempty"`

	// UpdateStrategy is the update strategy of both DaemonSets.
	// +optional
	// +kubebuilder:default={}
	UpdateStrategy ChassisUpdateStrategy `json:"updateStrategy,omitempty"`

	// RemoteProbeIntervalMs is how long, in milliseconds, ovn-controller
	// waits for a silent southbound connection before it probes it; 0
	// never probes.
	// +optional
	// +kubebuilder:default=60000
	// +kubebuilder:validation:Minimum=0
	RemoteProbeIntervalMs *int32 `json:"remoteProbeIntervalMs,omitempty"`

	// OVS configures the Open vSwitch DaemonSet {chassis}-ovs.
	// +optional
	OVS OVSSpec `json:"ovs,omitempty"`

	// Controller configures the DaemonSet {chassis}-ovn-controller.
	// +optional
	Controller OVNControllerSpec `json:"controller,omitempty"`

	// Image is the OVN image of both DaemonSets and the maintenance Jobs.
	// Absent, it is ghcr.io/c5c3/ovn:26.03.2, resolved on every pass and
	// never written back.
	// +optional
	Image *anvilmeta.ImageSpec `json:"image,omitempty"`

	// TargetClusterRef places the DaemonSets on a registered compute
	// cluster. Absent, they are placed on the management cluster. It may
	// differ from the central's; the central must then publish its
	// databases outside its cluster. It cannot be added, removed or changed
	// after creation.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

// CentralReference names an OVNCentral in the chassis's namespace.
type CentralReference struct {
	// Name of the OVNCentral.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ChassisGatewaySpec selects the gateway chassis.
type ChassisGatewaySpec struct {
	// NodeSelector selects, among the chassis nodes, the gateways. A node
	// that stops matching is evacuated before it loses the role.
	// +kubebuilder:validation:MinProperties=1
	NodeSelector map[string]string `json:"nodeSelector"`
}

// BridgeMapping maps one provider network to one OVS bridge.
type BridgeMapping struct {
	// PhysicalNetwork is the provider network's name in Neutron.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	PhysicalNetwork string `json:"physicalNetwork"`

	// Bridge is the OVS bridge, created on every node when missing. Its
	// name is at most 15 characters, the limit of a Linux interface name.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_.-]{1,15}$`
	Bridge string `json:"bridge"`
}

// Encapsulation types of a chassis.
const (
	// EncapGeneve is Geneve tunnelling, OVN's default.
	EncapGeneve = "geneve"
	// EncapVXLAN is VXLAN tunnelling, for fabrics without Geneve offload.
	EncapVXLAN = "vxlan"
)

// Update strategy types of a chassis's DaemonSets.
const (
	// RollingUpdateStrategy replaces pods on every template change.
	RollingUpdateStrategy = "RollingUpdate"
	// OnDeleteStrategy replaces a pod only once it is deleted.
	OnDeleteStrategy = "OnDelete"
)

// ChassisUpdateStrategy is the update strategy of a chassis's DaemonSets.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || !has(self.type) || self.type != 'OnDelete'",message="maxUnavailable applies to RollingUpdate only"
type ChassisUpdateStrategy struct {
	// Type is RollingUpdate or OnDelete.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +kubebuilder:default=RollingUpdate
	Type string `json:"type,omitempty"`

	// MaxUnavailable is how many nodes RollingUpdate updates at a time.
	// Absent, it is 1, resolved on every pass: a node's datapath is down
	// while its pods restart.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// OVSSpec configures Open vSwitch on the chassis nodes.
type OVSSpec struct {
	// Resources of the ovsdb-server and ovs-vswitchd containers.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// RevalidatorThreads is ovs-vswitchd's n-revalidator-threads. Absent,
	// it is 2, resolved on every pass.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RevalidatorThreads *int32 `json:"revalidatorThreads,omitempty"`
}

// OVNControllerSpec configures ovn-controller on the chassis nodes.
type OVNControllerSpec struct {
	// Resources of the ovn-controller container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// OVNChassisStatus is the observed state of an OVNChassis.
type OVNChassisStatus struct {
	anvilmeta.CommonStatus `json:",inline"`

	// InstalledImage is the image reference the ovn-controller DaemonSet
	// last became ready on, on every selected node.
	// +optional
	InstalledImage string `json:"installedImage,omitempty"`

	// ClientSecretName names the central's client identity as the
	// chassis's cluster has it: the central's own Secret on the same
	// cluster, else {chassis}-ovn-client, which holds only the central's
	// CA (ca.crt); the key stays on the management cluster. The nodes
	// present identities of their own.
	// +optional
	ClientSecretName string `json:"clientSecretName,omitempty"`

	// DesiredNumberScheduled is the ovn-controller DaemonSet's; 0 without
	// one.
	// +optional
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled,omitempty"`

	// NumberReady is the ovn-controller DaemonSet's; 0 without one.
	// +optional
	NumberReady int32 `json:"numberReady,omitempty"`

	// Nodes are the chassis nodes, and those being removed.
	// +optional
	// +listType=map
	// +listMapKey=name
	Nodes []ChassisNodeStatus `json:"nodes,omitempty"`
}

// ChassisNodeStatus is what one node last applied.
type ChassisNodeStatus struct {
	// Name of the Node.
	Name string `json:"name"`

	// SystemID is the node's chassis name in the southbound database. It
	// is kept for the node's lifetime as a chassis.
	SystemID string `json:"systemID"`

	// Gateway is true while the node is a gateway chassis. It stays true
	// after the node left the gateway selector until its evacuation
	// succeeded.
	// +optional
	Gateway bool `json:"gateway,omitempty"`

	// ConfigHash is the first 8 hex digits of the SHA-256 of the node's
	// entry it last applied; a different entry runs the apply Job.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// IdentityHash is the first 8 hex digits of the SHA-256 of the
	// certificate the node's identity Job last installed on the node; a
	// renewed certificate runs the Job again.
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`

	// GatewayEvacuated is true once the node's gateway rows were removed
	// from the northbound database after it lost the gateway role; it is
	// reset when the node becomes a gateway again.
	// +optional
	GatewayEvacuated bool `json:"gatewayEvacuated"`

	// Leaving is true while the node is removed from the southbound
	// database, because it no longer matches or no longer exists.
	// +optional
	Leaving bool `json:"leaving"`
}

// OVNChassis runs Open vSwitch and ovn-controller on the hypervisor nodes of one cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=ovnchassis,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Central",type=string,JSONPath=`.spec.centralRef.name`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredNumberScheduled`
// +kubebuilder:printcolumn:name="Ready Pods",type=integer,JSONPath=`.status.numberReady`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OVNChassis struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec OVNChassisSpec `json:"spec"`

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

// ChassisIdentityHostPath is the directory on every node of a chassis that
// holds the node's own identity (tls.key, tls.crt, ca.crt), installed by
// the chassis's identity Job. ovn-controller and the metadata agent on the
// node present it to the Southbound.
const ChassisIdentityHostPath = "/etc/ovn/chassis-tls"
