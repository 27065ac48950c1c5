package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// MaxNovaComputeNameLength bounds a pool's name: it is the
// app.kubernetes.io/instance label value of every child.
const MaxNovaComputeNameLength = 63

// NovaComputeSpec is the desired state of a NovaCompute: which nodes of
// which cluster run nova-compute for which Nova, and how.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
// +kubebuilder:validation:XValidation:rule="self.novaRef.name == oldSelf.novaRef.name",message="novaRef is immutable"
type NovaComputeSpec struct {
	// NovaRef names the Nova, in the same namespace, whose contract the
	// pool's nova-compute runs with.
	NovaRef NovaReference `json:"novaRef"`

	// NodeSelector selects the pool's nodes by label. A node that stops
	// matching is drained and released.
	// +kubebuilder:validation:MinProperties=1
	NodeSelector map[string]string `json:"nodeSelector"`

	// Tolerations are copied to the nova-compute pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Image is the nova-compute image. Absent, the pool runs
	// ghcr.io/c5c3/nova-compute:<the Nova's installed release>, resolved on
	// every pass and never written back.
	// +optional
	Image *anvilmeta.ImageSpec `json:"image,omitempty"`

	// Libvirt configures the [libvirt] section of the pool's configuration.
	// +optional
	Libvirt LibvirtSpec `json:"libvirt,omitempty"`

	// UpdateStrategy is the DaemonSet's update strategy.
	// +optional
	UpdateStrategy UpdateStrategySpec `json:"updateStrategy,omitempty"`

	// Resources apply to nova-compute and both init containers. A resource
	// left out gets its default: a CPU request of 150m without limit, and
	// 768Mi of memory as request and limit.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// ExtraConfig is merged over the pool's rendered configuration, section
	// by section; its values win. Only the options of the allowlist in
	// docs/reference/novacompute-admission.md may be set.
	// +optional
	ExtraConfig map[string]map[string]string `json:"extraConfig,omitempty"`

	// TargetClusterRef places the DaemonSet and its ConfigMaps on a
	// registered compute cluster. Absent, they are placed on the management
	// cluster. It cannot be added, removed or changed after creation.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`

	// Traits are custom Placement traits every node of the pool carries,
	// for example CUSTOM_POOL_A.
	// +optional
	// +listType=set
	Traits []string `json:"traits,omitempty"`

	// HostTraits give single nodes traits of their own.
	// +optional
	// +listType=map
	// +listMapKey=nodeName
	HostTraits []HostTraitsSpec `json:"hostTraits,omitempty"`

	// FailedBuildsWarningThreshold makes the pool record a FailedBuilds
	// Warning event when a node's failed_builds counter rises from below
	// the threshold to the threshold or above. Absent, the pool reports
	// the counter in status.nodes and the metric but records no event.
	// +optional
	// +kubebuilder:validation:Minimum=1
	FailedBuildsWarningThreshold *int32 `json:"failedBuildsWarningThreshold,omitempty"`
}

// NovaReference names a Nova in the pool's namespace.
type NovaReference struct {
	// Name of the Nova.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// LibvirtSpec configures the libvirt driver.
//
// +kubebuilder:validation:XValidation:rule="(has(self.cpuMode) && self.cpuMode == 'custom') == (has(self.cpuModels) && size(self.cpuModels) > 0)",message="cpuModels is required when cpuMode is custom and must be empty otherwise"
type LibvirtSpec struct {
	// VirtType is [libvirt] virt_type.
	// +optional
	// +kubebuilder:validation:Enum=kvm;qemu
	// +kubebuilder:default=kvm
	VirtType string `json:"virtType,omitempty"`
	// CPUMode is [libvirt] cpu_mode; empty leaves it out.
	// +optional
	// +kubebuilder:validation:Enum=host-model;host-passthrough;custom;none
	CPUMode string `json:"cpuMode,omitempty"`
	// CPUModels is [libvirt] cpu_models, required with cpuMode custom.
	// +optional
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_.-]+$`
	CPUModels []string `json:"cpuModels,omitempty"`
	// ImagesType is [libvirt] images_type; empty leaves it out.
	// +optional
	// +kubebuilder:validation:Enum=default;qcow2;raw;flat
	ImagesType string `json:"imagesType,omitempty"`
}

// Update strategy types of a pool's DaemonSet.
const (
	// RollingUpdateStrategy replaces pods on every template change.
	RollingUpdateStrategy = "RollingUpdate"
	// OnDeleteStrategy replaces a pod only once it is deleted.
	OnDeleteStrategy = "OnDelete"
)

// UpdateStrategySpec is the pool's DaemonSet update strategy.
type UpdateStrategySpec struct {
	// Type is RollingUpdate or OnDelete.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +kubebuilder:default=RollingUpdate
	Type string `json:"type,omitempty"`
	// MaxUnavailable is how many pods RollingUpdate replaces at a time;
	// default 1.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// Trait modes of a HostTraitsSpec.
const (
	// TraitsModeMerge gives the node the pool's traits and the entry's.
	TraitsModeMerge = "Merge"
	// TraitsModeReplace gives the node only the entry's traits.
	TraitsModeReplace = "Replace"
)

// HostTraitsSpec gives one node custom traits.
type HostTraitsSpec struct {
	// NodeName is the node, by name.
	// +kubebuilder:validation:MinLength=1
	NodeName string `json:"nodeName"`
	// Traits are custom Placement traits.
	// +listType=set
	Traits []string `json:"traits"`
	// Mode is Merge (the pool's traits and these, the default) or Replace
	// (only these).
	// +optional
	// +kubebuilder:validation:Enum=Merge;Replace
	Mode string `json:"mode,omitempty"`
}

// Phases of a node in a pool.
const (
	// NodePending: selected; no service yet, or its host is not mapped.
	NodePending = "Pending"
	// NodeActive: its service registered and its host was seen mapped.
	NodeActive = "Active"
	// NodeDraining: it left the pool; its pod stays and its service is
	// disabled while servers remain.
	NodeDraining = "Draining"
	// NodeReleasing: no server is left; the pod is released and the
	// service deleted once the pod is gone.
	NodeReleasing = "Releasing"
	// NodeConflict: another pool of the same Nova on the same cluster
	// holds it; this pool runs no pod there.
	NodeConflict = "Conflict"
)

// NovaComputeNode is one node the pool holds or is refused.
type NovaComputeNode struct {
	// Name of the Node, which is also the Nova host name.
	Name string `json:"name"`
	// Phase is Pending, Active, Draining, Releasing or Conflict.
	Phase string `json:"phase"`
	// Zone is the node's topology.kubernetes.io/zone label.
	// +optional
	Zone string `json:"zone,omitempty"`
	// ServiceID is the id of the nova-compute service Nova lists for the
	// node's host name, whoever runs it; compare AdoptedServiceID.
	// +optional
	ServiceID string `json:"serviceID,omitempty"`
	// AdoptedServiceID is the id (a UUID) of the nova-compute service the
	// pool adopted as its own on this node: the service it listed for the
	// host while a pod of the pool ran on the node. It is recorded once
	// and kept; it is cleared only when Nova lists no
	// service for the host any more. The pool disables and deletes only
	// this service: a service of the host name with another id, or any
	// service while none is adopted, is left as it is (reason
	// ServiceNotAdopted).
	// +optional
	AdoptedServiceID string `json:"adoptedServiceID,omitempty"`
	// ServiceStatus is enabled or disabled.
	// +optional
	ServiceStatus string `json:"serviceStatus,omitempty"`
	// ServiceState is up or down.
	// +optional
	ServiceState string `json:"serviceState,omitempty"`
	// DisabledReason is the service's disabled reason.
	// +optional
	DisabledReason string `json:"disabledReason,omitempty"`
	// Instances counts the servers left on a Draining node.
	// +optional
	Instances *int32 `json:"instances,omitempty"`
	// ConflictsWith names the pool that holds a Conflict node.
	// +optional
	ConflictsWith string `json:"conflictsWith,omitempty"`
	// ServiceRegisteredAt is when the pool first saw the node's service,
	// which the onboarding metrics measure from.
	// +optional
	ServiceRegisteredAt *metav1.Time `json:"serviceRegisteredAt,omitempty"`
	// FailedBuilds is the failed_builds counter nova-compute keeps for the
	// node's host in the cell database: builds that ended FAILED or
	// RESCHEDULED there since the last build that succeeded. nova-compute
	// writes it every 60 seconds. Absent until the pool first read it; the
	// last value read stays while the database cannot be reached.
	// +optional
	FailedBuilds *int32 `json:"failedBuilds,omitempty"`
}

// NovaComputeStatus is the observed state of a NovaCompute.
type NovaComputeStatus struct {
	anvilmeta.CommonStatus `json:",inline"`

	// InstalledImage is the image every node last ran a ready pod of.
	// +optional
	InstalledImage string `json:"installedImage,omitempty"`
	// DesiredNumberScheduled is the DaemonSet's; 0 without one.
	// +optional
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled,omitempty"`
	// NumberReady is the DaemonSet's; 0 without one.
	// +optional
	NumberReady int32 `json:"numberReady,omitempty"`
	// RolledOutContractHash is the contract hash every pod of the pool's
	// DaemonSet runs. It moves when a template with a new hash has fully
	// rolled out (for OnDelete, once every pod was replaced), and a pool
	// without pods has rolled out the contract it read. The ControlPlane
	// reports it per cluster to tell when a rotation is complete.
	// +optional
	RolledOutContractHash string `json:"rolledOutContractHash,omitempty"`
	// Nodes are the nodes the pool holds, and those it is refused.
	// +optional
	// +listType=map
	// +listMapKey=name
	Nodes []NovaComputeNode `json:"nodes,omitempty"`
}

// NovaCompute is a pool of hypervisor nodes on one cluster that run
// nova-compute for a Nova. It turns the selected nodes into Nova hosts and
// drains them again when they leave.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=novacomputes,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredNumberScheduled`
// +kubebuilder:printcolumn:name="Ready Pods",type=integer,JSONPath=`.status.numberReady`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NovaCompute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec NovaComputeSpec `json:"spec"`

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
