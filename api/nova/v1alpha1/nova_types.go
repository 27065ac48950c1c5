package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// NovaSpec is the desired state of a Nova: the control plane Anvil runs
// and the compute contract it publishes.
//
// +kubebuilder:validation:XValidation:rule="!has(self.remoteCompute) || has(self.messaging.tls)",message="remoteCompute requires messaging.tls: a compute on another cluster verifies the broker against the messaging CA bundle"
// +kubebuilder:validation:XValidation:rule="has(self.targetClusterRef) == has(oldSelf.targetClusterRef)",message="targetClusterRef is immutable"
type NovaSpec struct {
	// OpenStackRelease is the release the images carry, for example 2026.1.
	// +kubebuilder:validation:Pattern=`^\d{4}\.[12]$`
	OpenStackRelease string `json:"openStackRelease"`

	// Image is the Nova image.
	Image anvilmeta.ImageSpec `json:"image"`

	// Messaging is the message bus the control plane and every compute use.
	Messaging MessagingSpec `json:"messaging"`

	// KeystoneEndpoint is the in-cluster Keystone URL; it becomes every
	// auth_url of the in-cluster contract.
	// +kubebuilder:validation:Pattern=`^https?://`
	KeystoneEndpoint string `json:"keystoneEndpoint"`

	// KeystonePublicEndpoint is the public Keystone URL, used as
	// www_authenticate_uri. It falls back to KeystoneEndpoint.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	KeystonePublicEndpoint string `json:"keystonePublicEndpoint,omitempty"`

	// ServiceUser is the Keystone user every Nova client section
	// authenticates as.
	ServiceUser ServiceUserSpec `json:"serviceUser"`

	// Region is the Keystone region of the catalog entries; empty leaves
	// region_name out.
	// +optional
	Region string `json:"region,omitempty"`

	// Endpoints pins or enables the services Nova talks to.
	// +optional
	// +nullable
	Endpoints EndpointsSpec `json:"endpoints,omitempty"`

	// Metadata configures the metadata API.
	Metadata MetadataSpec `json:"metadata"`

	// ConsoleProxy configures the noVNC console proxy that [vnc] points at;
	// without it no proxy runs.
	// +optional
	// +nullable
	ConsoleProxy *ConsoleProxySpec `json:"consoleProxy,omitempty"`

	// Logging configures the services' logs.
	// +optional
	// +nullable
	Logging LoggingSpec `json:"logging,omitempty"`

	// RemoteCompute publishes a second contract, for computes on other
	// clusters: it names the public Keystone and the broker's external
	// listener. Removing it deletes that contract.
	// +optional
	RemoteCompute *RemoteComputeSpec `json:"remoteCompute,omitempty"`

	// APIDatabase is Nova's API database (nova_api). The control plane
	// needs it, and so do the pools' host discovery Jobs; the Nova runs
	// its schema Jobs, the server and its users are the user's.
	// +optional
	APIDatabase *DatabaseSpec `json:"apiDatabase,omitempty"`

	// Database is the cell's database (nova); cell0's is the same name
	// with _cell0 appended, on the same server. The control plane needs it.
	// +optional
	Database *DatabaseSpec `json:"database,omitempty"`

	// Replicas is how many pods each of the api, metadata, scheduler and
	// conductor Deployments runs; the console proxy runs one. Each
	// Deployment gets a PodDisruptionBudget that lets one pod go at a time.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Replicas *int32 `json:"replicas,omitempty"`

	// TargetClusterRef places the Nova's children on a registered cluster.
	// It cannot be added, removed or changed after creation.
	// +optional
	TargetClusterRef *anvilmeta.TargetClusterRef `json:"targetClusterRef,omitempty"`
}

// DefaultDatabasePort is the port a database spec defaults to, for the
// readers of an object the apiserver did not default.
const DefaultDatabasePort int32 = 3306

// DatabaseSpec points at a brownfield MySQL or MariaDB database.
type DatabaseSpec struct {
	// Host is the database server's host name or IP address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.:-]+$`
	Host string `json:"host"`
	// Port is the server's port.
	// +optional
	// +kubebuilder:default=3306
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// Database is the schema's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_]+$`
	Database string `json:"database"`
	// SecretRef names a Secret, in the Nova's namespace, with the keys
	// username and password.
	SecretRef DatabaseSecretRef `json:"secretRef"`
}

// DatabaseSecretRef names the Secret of a database's credentials.
type DatabaseSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// MessagingSpec points at a brownfield message bus.
type MessagingSpec struct {
	// SecretRef names the Secret key that holds the rabbit:// transport URL.
	SecretRef TransportURLSecretRef `json:"secretRef"`
	// TLS makes every client verify the broker against a CA bundle; without
	// it the bus is plaintext.
	// +optional
	TLS *MessagingTLSSpec `json:"tls,omitempty"`
}

// MessagingTLSSpec names the broker's CA bundle.
type MessagingTLSSpec struct {
	// CABundleSecretRef names the Secret key that holds the PEM CA bundle.
	CABundleSecretRef CABundleSecretRef `json:"caBundleSecretRef"`
}

// TransportURLSecretRef names a Secret key holding a rabbit:// URL.
type TransportURLSecretRef struct {
	// Name of the Secret, in the Nova's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	// +kubebuilder:default=transport_url
	Key string `json:"key,omitempty"`
}

// CABundleSecretRef names a Secret key holding a PEM CA bundle.
type CABundleSecretRef struct {
	// Name of the Secret, in the Nova's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	// +kubebuilder:default=ca.crt
	Key string `json:"key,omitempty"`
}

// PasswordSecretRef names a Secret key holding a password.
type PasswordSecretRef struct {
	// Name of the Secret, in the Nova's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	// +kubebuilder:default=password
	Key string `json:"key,omitempty"`
}

// SharedSecretRef names a Secret key holding the metadata shared secret.
type SharedSecretRef struct {
	// Name of the Secret, in the Nova's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	// +kubebuilder:default=shared_secret
	Key string `json:"key,omitempty"`
}

// ServiceUserSpec is a Keystone service user.
type ServiceUserSpec struct {
	// Username of the service user.
	// +optional
	// +kubebuilder:default=nova
	Username string `json:"username,omitempty"`
	// ProjectName is the project the user is scoped to.
	// +optional
	// +kubebuilder:default=service
	ProjectName string `json:"projectName,omitempty"`
	// UserDomainName is the user's domain.
	// +optional
	// +kubebuilder:default=Default
	UserDomainName string `json:"userDomainName,omitempty"`
	// ProjectDomainName is the project's domain.
	// +optional
	// +kubebuilder:default=Default
	ProjectDomainName string `json:"projectDomainName,omitempty"`
	// SecretRef names the Secret key holding the user's password.
	SecretRef PasswordSecretRef `json:"secretRef"`
}

// EndpointsSpec pins or enables the services Nova talks to. Its fields
// are nullable because the ControlPlane projects them as values: when a
// service is removed, server-side apply drops the fields the projection
// owned and leaves the emptied object null.
type EndpointsSpec struct {
	// Placement pins the placement endpoint.
	// +optional
	// +nullable
	Placement EndpointOverride `json:"placement,omitempty"`
	// Neutron pins the networking endpoint.
	// +optional
	// +nullable
	Neutron EndpointOverride `json:"neutron,omitempty"`
	// Glance pins the image endpoint.
	// +optional
	// +nullable
	Glance EndpointOverride `json:"glance,omitempty"`
	// Cinder enables and optionally pins block storage.
	// +optional
	// +nullable
	Cinder OptionalEndpoint `json:"cinder,omitempty"`
	// Barbican enables and optionally pins the key manager.
	// +optional
	// +nullable
	Barbican OptionalEndpoint `json:"barbican,omitempty"`
}

// EndpointOverride pins a service's endpoint instead of the catalog's.
type EndpointOverride struct {
	// Override is the URL to use instead of the catalog's.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	Override string `json:"override,omitempty"`
}

// OptionalEndpoint is a service Nova uses only when enabled.
type OptionalEndpoint struct {
	// Enabled makes Nova use the service.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Override is the URL to use instead of the catalog's.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	Override string `json:"override,omitempty"`
}

// MetadataSpec configures the metadata API.
type MetadataSpec struct {
	// SharedSecretRef names the secret the Neutron metadata agent signs
	// proxied requests with.
	SharedSecretRef SharedSecretRef `json:"sharedSecretRef"`
	// Gateway publishes the metadata API through a Gateway API listener:
	// the Nova writes the HTTPRoute {nova}-metadata to its Service on port
	// 8775. Without it no route is written, and one written earlier is
	// deleted.
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`
}

// GatewaySpec publishes a service on a hostname of a Gateway.
type GatewaySpec struct {
	// ParentRef names the Gateway, and optionally its listener.
	ParentRef GatewayParentRef `json:"parentRef"`
	// Hostname the route answers on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostname string `json:"hostname"`
}

// GatewayParentRef names a Gateway.
type GatewayParentRef struct {
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the Gateway; empty means the Nova's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// SectionName selects one listener of the Gateway.
	// +optional
	SectionName string `json:"sectionName,omitempty"`
}

// Console is the console proxy's settings, the zero value when unset.
func (s *NovaSpec) Console() ConsoleProxySpec {
	if s.ConsoleProxy == nil {
		return ConsoleProxySpec{}
	}
	return *s.ConsoleProxy
}

// ConsoleProxySpec configures the noVNC console proxy.
type ConsoleProxySpec struct {
	// Enabled runs the proxy; computes then advertise its URL.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Hostname publishes the proxy at https://<hostname>; without it the
	// proxy is reached through its cluster Service.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostname string `json:"hostname,omitempty"`
}

// LoggingSpec configures the services' logs.
type LoggingSpec struct {
	// Debug turns on debug logging.
	// +optional
	Debug bool `json:"debug,omitempty"`
}

// RemoteComputeSpec is what computes on other clusters need instead of the
// in-cluster addresses.
type RemoteComputeSpec struct {
	// KeystoneEndpoint is the public https Keystone URL; it becomes every
	// auth_url of the remote contract.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^https://`
	KeystoneEndpoint string `json:"keystoneEndpoint"`
	// TransportURLSecretRef names the Secret key holding the rabbit:// URL
	// of the broker's external listener. Anvil reads it and never writes it.
	TransportURLSecretRef TransportURLSecretRef `json:"transportURLSecretRef"`
}

// NovaStatus is the observed state of a Nova.
type NovaStatus struct {
	anvilmeta.CommonStatus `json:",inline"`

	// ComputeConfigSecretRef names the in-cluster compute contract,
	// {nova}-compute-config. The name is stable for the Nova's lifetime.
	// +optional
	ComputeConfigSecretRef *anvilmeta.LocalObjectReference `json:"computeConfigSecretRef,omitempty"`

	// RemoteComputeConfigSecretRef names the remote compute contract,
	// {nova}-remote-compute-config, while remoteCompute is set and it has
	// been written.
	// +optional
	RemoteComputeConfigSecretRef *anvilmeta.LocalObjectReference `json:"remoteComputeConfigSecretRef,omitempty"`

	// InstalledRelease is the release the control plane runs: set to
	// spec.openStackRelease once every database Job of that release and
	// image has succeeded and every Deployment is available on it. Pools
	// default their image to it, so they follow only after the schemas
	// moved.
	// +optional
	InstalledRelease string `json:"installedRelease,omitempty"`

	// Cells are Nova's cells, cell0 then cell1, with the release their
	// schema was last synced to.
	// +optional
	// +listType=map
	// +listMapKey=name
	Cells []CellStatus `json:"cells,omitempty"`

	// ManageConfigSecretRef names {nova}-manage-config, the database
	// configuration nova-manage reads, while both databases are declared.
	// +optional
	ManageConfigSecretRef *anvilmeta.LocalObjectReference `json:"manageConfigSecretRef,omitempty"`
}

// CellStatus is one cell of the Nova.
type CellStatus struct {
	// Name of the cell: cell0 or cell1.
	Name string `json:"name"`
	// Mapped is true once the cell is mapped in the API database.
	Mapped bool `json:"mapped"`
	// SyncedRelease is the release whose schema sync last succeeded on
	// the cell's database.
	// +optional
	SyncedRelease string `json:"syncedRelease,omitempty"`
}

// Nova is a Nova control plane. It runs the api, metadata, scheduler,
// conductor and console proxy Deployments and the database Jobs, and
// publishes the compute contract that every hypervisor of the cloud reads.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=novas,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Release",type=string,JSONPath=`.status.installedRelease`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 41",message="metadata.name must be at most 41 characters: the names of the Nova's children append suffixes to it"
// +kubebuilder:validation:XValidation:rule="!['-api', '-metadata', '-scheduler', '-conductor', '-novncproxy', '-console', '-cell0'].exists(s, self.metadata.name.endsWith(s))",message="metadata.name must not end in -api, -metadata, -scheduler, -conductor, -novncproxy, -console or -cell0: those suffixes name the Nova's children"
type Nova struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec NovaSpec `json:"spec"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status NovaStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NovaList is a list of Nova objects.
type NovaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Nova `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &Nova{}, &NovaList{})
}

// TargetClusterName returns the name of the cluster that receives the
// children, or "" when they stay on the management cluster.
func (o *Nova) TargetClusterName() string {
	if o.Spec.TargetClusterRef == nil {
		return ""
	}
	return o.Spec.TargetClusterRef.Name
}
