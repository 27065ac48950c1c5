package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// MaxOVNCentralNameLength bounds a central's name: its backup CronJob is
// {name}-backup, and a CronJob name may have at most 52 characters because
// the CronJob controller appends an 11-character suffix to name its Jobs.
const MaxOVNCentralNameLength = 45

// OVNCentralSpec is the desired state of an OVNCentral: the clustered
// northbound and southbound databases, northd, an optional southbound relay
// and the databases' backup.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
type OVNCentralSpec struct {
	// Image is the OVN image every container of the central runs. Absent,
	// it is ghcr.io/c5c3/ovn:26.03.2, resolved on every pass and never
	// written back, so that a new Anvil release moves centrals that did not
	// pin one.
	// +optional
	Image *anvilmeta.ImageSpec `json:"image,omitempty"`

	// Northd configures the ovn-northd Deployment, which translates the
	// northbound database into the southbound one.
	// +optional
	// +kubebuilder:default={}
	Northd NorthdSpec `json:"northd,omitempty"`

	// TLS names the cert-manager issuer of the databases' server
	// certificates and of the client certificate chassis and agents use.
	// Without it the central issues them from a CA of its own.
	// +optional
	TLS OVNTLSSpec `json:"tls,omitempty"`

	// Backup configures the CronJob that copies both databases to a claim.
	// Absent, the CronJob still runs with every default: a central is never
	// without backups unless they are suspended explicitly.
	// +optional
	Backup *OVNBackupSpec `json:"backup,omitempty"`

	// Northbound is the northbound database cluster. Its node ports start
	// at 30641 unless nodePortBase says otherwise.
	// +optional
	// +kubebuilder:default={}
	Northbound OVNDatabaseSpec `json:"northbound,omitempty"`

	// Southbound is the southbound database cluster. Its node ports start
	// at 30651 unless nodePortBase says otherwise.
	// +optional
	// +kubebuilder:default={}
	Southbound OVNDatabaseSpec `json:"southbound,omitempty"`

	// Relay runs a read-mostly southbound relay in front of the southbound
	// database, for fleets of chassis too large to connect to the Raft
	// members directly. Absent, no relay runs; removing it deletes the
	// relay.
	// +optional
	Relay *OVNRelaySpec `json:"relay,omitempty"`

	// TargetClusterRef places the children on a registered compute cluster.
	// Absent, they are placed on the management cluster. It cannot be added,
	// removed or changed after creation, because the children already exist
	// where it first pointed.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

// NorthdSpec configures ovn-northd.
type NorthdSpec struct {
	// Replicas is how many ovn-northd pods run. They take a lock in the
	// southbound database, so one works and the others stand by.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`

	// Threads is how many threads each ovn-northd computes the logical
	// flows with.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Threads *int32 `json:"threads,omitempty"`
}

// Kinds of cert-manager issuer an OVNTLSSpec may name.
const (
	// IssuerKind is a namespaced cert-manager Issuer, in the central's
	// namespace.
	IssuerKind = "Issuer"
	// ClusterIssuerKind is a cluster-scoped cert-manager ClusterIssuer.
	ClusterIssuerKind = "ClusterIssuer"
)

// OVNTLSSpec configures the certificates of a central.
type OVNTLSSpec struct {
	// IssuerRef names the cert-manager issuer of every certificate of the
	// central. It must sign with a CA, since the databases and every
	// client verify each other against the CA that comes with their
	// certificates. Unset, the central gets a self-signed CA of its own
	// (the Issuer {central}-ca), so no other central's keys open its
	// databases. A named issuer makes every central it signs for one
	// trust domain.
	// +optional
	// +nullable
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// Name of the issuer.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Kind is Issuer or ClusterIssuer.
	// +optional
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=ClusterIssuer
	Kind string `json:"kind,omitempty"`
}

// OVNBackupSpec configures the backup CronJob {central}-backup.
type OVNBackupSpec struct {
	// Schedule is the CronJob's schedule: five fields, minute hour
	// day-of-month month day-of-week, in the controller-manager's time zone.
	// +optional
	// +kubebuilder:default="0 2 * * *"
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule,omitempty"`

	// RetentionDays is how long a backup is kept; each run deletes the
	// older ones.
	// +optional
	// +kubebuilder:default=14
	// +kubebuilder:validation:Minimum=1
	RetentionDays *int32 `json:"retentionDays,omitempty"`

	// Suspend stops scheduling new backups; existing ones are kept.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Storage is the claim {central}-backup the backups are written to.
	// +optional
	Storage *BackupStorageSpec `json:"storage,omitempty"`
}

// BackupStorageSpec sizes the backup claim.
type BackupStorageSpec struct {
	// Size of the claim. It must hold retentionDays backups of both
	// databases.
	// +optional
	// +kubebuilder:default="5Gi"
	// +kubebuilder:validation:Pattern=`^[0-9]+(Mi|Gi|Ti)$`
	Size string `json:"size,omitempty"`

	// StorageClassName is the claim's storage class; empty uses the
	// cluster's default class.
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
}

// OVNDatabaseSpec is one clustered OVN database, northbound or southbound:
// a StatefulSet of Raft members, each with its own claim and Service.
//
// The three transition rules compare only when both sides carry the field,
// so that an object stored before a default existed can still be updated.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(oldSelf.replicas) || self.replicas == oldSelf.replicas",message="replicas is immutable: Raft membership changes are not supported"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(oldSelf.storage) || self.storage == oldSelf.storage",message="storage is immutable: volumeClaimTemplates cannot change"
// +kubebuilder:validation:XValidation:rule="!has(self.electionTimerMs) || !has(oldSelf.electionTimerMs) || self.electionTimerMs == oldSelf.electionTimerMs",message="electionTimerMs is immutable: it is applied when the clustered database is created"
type OVNDatabaseSpec struct {
	// Replicas is the number of Raft members. It is odd, because an even
	// count survives no more failures than the odd count below it, and it
	// is fixed at creation, since Anvil does not add or remove members.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:validation:XValidation:rule="self % 2 == 1",message="replicas must be odd"
	Replicas *int32 `json:"replicas,omitempty"`

	// Storage is each member's claim. It is fixed at creation, because a
	// StatefulSet's volumeClaimTemplates cannot change.
	// +optional
	// +kubebuilder:default={}
	Storage DatabaseStorageSpec `json:"storage,omitempty"`

	// ElectionTimerMs is the Raft election timer in milliseconds. It is
	// fixed at creation, because the cluster is created with it.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1000
	// +kubebuilder:validation:Maximum=180000
	ElectionTimerMs *int32 `json:"electionTimerMs,omitempty"`

	// ExternallyReachable publishes every member on a NodePort Service,
	// port nodePortBase + ordinal, and its node address in
	// status.<db>.dbAddress. Chassis and agents on other clusters connect
	// only through those addresses.
	// +optional
	ExternallyReachable bool `json:"externallyReachable,omitempty"`

	// NodePortBase is the node port of member 0; member i listens on
	// NodePortBase + i. Absent, it is 30641 for northbound and 30651 for
	// southbound, resolved on every pass.
	// +optional
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	NodePortBase *int32 `json:"nodePortBase,omitempty"`

	// InactivityProbeMs is how long, in milliseconds, the database waits
	// for a silent client before it probes the connection; 0 never probes.
	// +optional
	// +kubebuilder:default=60000
	// +kubebuilder:validation:Minimum=0
	InactivityProbeMs *int32 `json:"inactivityProbeMs,omitempty"`

	// Resources of the ovsdb-server container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector restricts the members to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are copied to the members' pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// DatabaseStorageSpec sizes a database member's claim.
type DatabaseStorageSpec struct {
	// Size of each member's claim.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:Pattern=`^[0-9]+(Mi|Gi|Ti)$`
	Size string `json:"size,omitempty"`

	// StorageClassName is the claims' storage class; empty uses the
	// cluster's default class.
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
}

// OVNRelaySpec is the southbound relay {central}-sb-relay.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || (has(self.externallyReachable) && self.externallyReachable)",message="nodePort is only allowed with externallyReachable: a relay that is not externally reachable has no node port"
type OVNRelaySpec struct {
	// Replicas is how many relay pods run behind the relay Service.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources of the relay container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector restricts the relay pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are copied to the relay pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// ExternallyReachable makes the relay Service a NodePort Service on
	// nodePort and publishes the relay's node addresses in
	// status.relayDbAddress, for chassis on other clusters.
	// +optional
	ExternallyReachable bool `json:"externallyReachable,omitempty"`

	// NodePort is the relay's node port. It may be set only with
	// externallyReachable; absent, it is 30661, resolved on every pass.
	// +optional
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	NodePort *int32 `json:"nodePort,omitempty"`
}

// OVNCentralStatus is the observed state of an OVNCentral. Its address
// fields are the interface chassis, agents and the ControlPlane read.
type OVNCentralStatus struct {
	anvilmeta.CommonStatus `json:",inline"`

	// Northbound reports the northbound database.
	// +optional
	Northbound OVNDatabaseStatus `json:"northbound,omitempty"`

	// Southbound reports the southbound database.
	// +optional
	Southbound OVNDatabaseStatus `json:"southbound,omitempty"`

	// RelayAddress is ssl:<relay cluster IP>:6642 while spec.relay is set.
	// +optional
	RelayAddress string `json:"relayAddress,omitempty"`

	// RelayDBAddress lists ssl:<node IP>:<nodePort> for every node that runs
	// a relay pod, sorted and comma-joined, while the relay is externally
	// reachable.
	// +optional
	RelayDBAddress string `json:"relayDbAddress,omitempty"`

	// ClientSecretName names the Secret with the client certificate
	// (tls.crt, tls.key, ca.crt), {central}-client, once it carries all
	// three keys.
	// +optional
	ClientSecretName string `json:"clientSecretName,omitempty"`

	// InstalledImage is the image reference northd last became available
	// on. Chassis wait while it differs from the central's resolved image.
	// +optional
	InstalledImage string `json:"installedImage,omitempty"`
}

// OVNDatabaseStatus is the observed state of one database.
type OVNDatabaseStatus struct {
	// ReadyReplicas is the StatefulSet's ready member count.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// InternalDBAddress lists ssl:<cluster IP>:<port> of every member's
	// Service in ordinal order, comma-joined: the address for clients on
	// the central's cluster.
	// +optional
	InternalDBAddress string `json:"internalDbAddress,omitempty"`

	// DBAddress lists ssl:<node IP>:<nodePortBase + i> of every member, in
	// ordinal order, comma-joined, while the database is externally
	// reachable: the address for clients on other clusters. It holds IP
	// literals only.
	// +optional
	DBAddress string `json:"dbAddress,omitempty"`
}

// OVNCentral runs the OVN northbound and southbound databases and northd.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=ovncentrals,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="NB",type=integer,JSONPath=`.status.northbound.readyReplicas`
// +kubebuilder:printcolumn:name="SB",type=integer,JSONPath=`.status.southbound.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.installedImage`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OVNCentral struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec OVNCentralSpec `json:"spec"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status OVNCentralStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OVNCentralList is a list of OVNCentral objects.
type OVNCentralList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OVNCentral `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &OVNCentral{}, &OVNCentralList{})
}

// TargetClusterName returns the name of the compute cluster that receives
// the children, or "" when they stay on the management cluster.
func (o *OVNCentral) TargetClusterName() string {
	if o.Spec.TargetClusterRef == nil {
		return ""
	}
	return o.Spec.TargetClusterRef.Name
}
