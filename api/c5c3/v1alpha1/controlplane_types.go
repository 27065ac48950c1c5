package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// ControlPlaneSpec is the desired state of a ControlPlane. Anvil runs Nova
// (and, later, OVN and the compute side); identity, image, network, block
// storage and key manager are services the ControlPlane references by their
// endpoints.
type ControlPlaneSpec struct {
	// Infrastructure names what the control plane runs on.
	// +optional
	Infrastructure InfrastructureSpec `json:"infrastructure,omitempty"`

	// Services declares the OpenStack services of the cloud.
	// +optional
	Services ServicesSpec `json:"services,omitempty"`
}

// InfrastructureSpec names the shared infrastructure.
type InfrastructureSpec struct {
	// Messaging is the message bus. Anvil does not run a broker: it is a
	// brownfield bus the platform provides. Required with services.nova.
	// +optional
	Messaging *MessagingSpec `json:"messaging,omitempty"`
}

// MessagingSpec points at a brownfield message bus.
type MessagingSpec struct {
	// SecretRef names the Secret key with the in-cluster rabbit:// URL,
	// including the broker user and password.
	SecretRef SecretKeyRef `json:"secretRef"`
	// TLS makes every client verify the broker against a CA bundle.
	// Computes on other clusters require it.
	// +optional
	TLS *MessagingTLSSpec `json:"tls,omitempty"`
}

// MessagingTLSSpec names the broker's CA bundle.
type MessagingTLSSpec struct {
	// CABundleSecretRef names the Secret key with the PEM CA bundle; the
	// key defaults to ca.crt.
	CABundleSecretRef SecretKeyRef `json:"caBundleSecretRef"`
}

// SecretKeyRef names a key of a Secret in the ControlPlane's namespace. An
// empty key means the default of the field that holds it.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	Key string `json:"key,omitempty"`
}

// ServicesSpec declares the services of the cloud.
type ServicesSpec struct {
	// Keystone is the identity service the cloud uses.
	// +optional
	Keystone *KeystoneSpec `json:"keystone,omitempty"`
	// Placement is the placement service.
	// +optional
	Placement *ReferencedService `json:"placement,omitempty"`
	// Neutron is the networking service, and the OVN central it runs on.
	// +optional
	Neutron *NeutronServiceSpec `json:"neutron,omitempty"`
	// Glance is the image service.
	// +optional
	Glance *ReferencedService `json:"glance,omitempty"`
	// Cinder is the block storage service; declaring it turns on [cinder]
	// in the compute contract.
	// +optional
	Cinder *ReferencedService `json:"cinder,omitempty"`
	// Barbican is the key manager; declaring it turns on [key_manager] and
	// [barbican] in the compute contract.
	// +optional
	Barbican *ReferencedService `json:"barbican,omitempty"`
	// Nova is the compute service, which Anvil runs.
	// +optional
	Nova *NovaServiceSpec `json:"nova,omitempty"`
}

// KeystoneSpec references the identity service.
type KeystoneSpec struct {
	// InternalEndpoint is the Keystone URL services inside the cluster use,
	// for example http://keystone.openstack.svc:5000/v3.
	// +kubebuilder:validation:Pattern=`^https?://`
	InternalEndpoint string `json:"internalEndpoint"`
	// PublicEndpoint is the Keystone URL clients outside the cluster use.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	PublicEndpoint string `json:"publicEndpoint,omitempty"`
	// Gateway publishes Keystone on a hostname; the public URL is then
	// https://<hostname>/v3. Give either publicEndpoint or gateway.
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`
	// Region is the Keystone region of the catalog entries.
	// +optional
	Region string `json:"region,omitempty"`
	// AdminCredentialsSecretRef names a Secret, in the ControlPlane's
	// namespace, with the Keystone admin credentials Anvil manages its
	// accounts with: password (required), and username, project_name,
	// user_domain_name and project_domain_name (defaults admin, admin,
	// Default, Default). Anvil authenticates at internalEndpoint. The user
	// domain is the admin domain the accounts are created in. Required by
	// services.nova.hypervisorOperator.
	// +optional
	AdminCredentialsSecretRef *anvilmeta.LocalObjectReference `json:"adminCredentialsSecretRef,omitempty"`
}

// ReferencedService is an OpenStack service the ControlPlane references.
type ReferencedService struct {
	// InternalEndpoint pins the URL services inside the cluster use, instead
	// of the catalog's internal entry.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	InternalEndpoint string `json:"internalEndpoint,omitempty"`
	// PublicEndpoint is the URL clients outside the cluster use.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	PublicEndpoint string `json:"publicEndpoint,omitempty"`
	// Gateway publishes the service on a hostname instead.
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`
}

// NeutronServiceSpec references Neutron and, optionally, the OVNCentral
// whose databases it uses.
type NeutronServiceSpec struct {
	ReferencedService `json:",inline"`
	// OVN names the OVNCentral Neutron's ML2/OVN driver uses. The
	// ControlPlane only reads it and reports it under OVNReady; it never
	// creates, changes or deletes the central.
	// +optional
	OVN *NeutronOVNSpec `json:"ovn,omitempty"`
}

// NeutronOVNSpec references the OVN central of Neutron.
type NeutronOVNSpec struct {
	// CentralRef names the OVNCentral.
	CentralRef OVNCentralReference `json:"centralRef"`
}

// OVNCentralReference names an OVNCentral.
type OVNCentralReference struct {
	// Name of the OVNCentral.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the OVNCentral; empty means the ControlPlane's. Only
	// the ControlPlane's own namespace is allowed: one central serves one
	// ControlPlane, and a ControlPlane reads nothing outside its namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ResolvedNamespace is the central's namespace: ref's, or cpNamespace when
// empty.
func (r OVNCentralReference) ResolvedNamespace(cpNamespace string) string {
	if r.Namespace == "" {
		return cpNamespace
	}
	return r.Namespace
}

// GatewaySpec publishes a service through a Gateway API listener.
type GatewaySpec struct {
	// ParentRef names the Gateway.
	// +optional
	ParentRef *ParentReference `json:"parentRef,omitempty"`
	// Hostname the service is published on.
	// +kubebuilder:validation:MinLength=1
	Hostname string `json:"hostname"`
	// Path prefix of the route; empty means "/".
	// +optional
	Path string `json:"path,omitempty"`
}

// ParentReference names a Gateway.
type ParentReference struct {
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the Gateway; defaults to the ControlPlane's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// SectionName selects a listener of the Gateway.
	// +optional
	SectionName string `json:"sectionName,omitempty"`
}

// NovaServiceSpec declares the Nova the ControlPlane projects as {cp}-nova.
type NovaServiceSpec struct {
	// OpenStackRelease is the release of the Nova images.
	// +kubebuilder:validation:Pattern=`^\d{4}\.[12]$`
	OpenStackRelease string `json:"openStackRelease"`
	// Image is the Nova image.
	Image anvilmeta.ImageSpec `json:"image"`
	// ServiceUserSecretRef names the Secret key with the nova service
	// user's password; the key defaults to password.
	ServiceUserSecretRef SecretKeyRef `json:"serviceUserSecretRef"`
	// MetadataSharedSecretRef names the metadata shared secret; without
	// it, Anvil generates {cp}-nova-metadata-secret.
	// +optional
	MetadataSharedSecretRef *SecretKeyRef `json:"metadataSharedSecretRef,omitempty"`
	// MetadataGateway publishes the metadata API on a hostname of its own.
	// +optional
	MetadataGateway *GatewaySpec `json:"metadataGateway,omitempty"`
	// ConsoleProxy configures the noVNC console proxy.
	// +optional
	ConsoleProxy *ConsoleProxySpec `json:"consoleProxy,omitempty"`
	// RemoteCompute hands over the broker's external listener, so that
	// compute clusters elsewhere can join.
	// +optional
	RemoteCompute *RemoteComputeSpec `json:"remoteCompute,omitempty"`
	// HypervisorOperator opts in to the hypervisor operator's account.
	// +optional
	HypervisorOperator *HypervisorOperatorSpec `json:"hypervisorOperator,omitempty"`
	// APIDatabase is the brownfield database of Nova's API, projected to
	// the Nova; host discovery needs it.
	// +optional
	APIDatabase *DatabaseSpec `json:"apiDatabase,omitempty"`
	// Database is the brownfield database of Nova's cell, projected to the
	// Nova.
	// +optional
	Database *DatabaseSpec `json:"database,omitempty"`
	// Replicas is the Nova's spec.replicas: how many pods each of its api,
	// metadata, scheduler and conductor Deployments runs.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Replicas *int32 `json:"replicas,omitempty"`
	// InternalEndpoint is the URL Anvil writes to the Keystone catalog as
	// the internal endpoint of the compute service, in
	// services.keystone.region. It defaults to Nova's API Service,
	// http://{cp}-nova-api.{namespace}.svc:8774/v2.1. Only written when
	// Anvil registers the region's compute catalog (condition
	// ComputeCatalogReady).
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	InternalEndpoint string `json:"internalEndpoint,omitempty"`
	// PublicEndpoint is the URL Anvil writes to the Keystone catalog as
	// the public endpoint of the compute service. Without it no public
	// endpoint is registered, and one Anvil registered before is removed.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	PublicEndpoint string `json:"publicEndpoint,omitempty"`
}

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
	// SecretName names a Secret, in the ControlPlane's namespace, with the
	// keys username and password.
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
}

// ConsoleProxySpec configures the noVNC console proxy.
type ConsoleProxySpec struct {
	// Enabled runs the proxy.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Hostname publishes the proxy at https://<hostname>.
	// +optional
	Hostname string `json:"hostname,omitempty"`
}

// RemoteComputeSpec hands over the broker's external listener.
type RemoteComputeSpec struct {
	// TransportURLSecretRef names the Secret, in the ControlPlane's
	// namespace, whose key (default transport_url) holds the rabbit:// URL
	// of the broker's external TLS listener.
	TransportURLSecretRef SecretKeyRef `json:"transportURLSecretRef"`
	// Credentials chooses whom compute clusters authenticate as. Shared
	// (the default) hands every cluster the nova service user. PerCluster
	// gives each cluster its own Keystone user, nova-compute-<cluster>,
	// with the roles the nova user holds on the service project, so that
	// one cluster's credentials can be revoked alone and every call names
	// its cluster. PerCluster needs services.keystone.adminCredentialsSecretRef.
	// +optional
	// +kubebuilder:default=Shared
	// +kubebuilder:validation:Enum=Shared;PerCluster
	Credentials ComputeCredentials `json:"credentials,omitempty"`
	// BrokerAdminSecretRef names a Secret, in the ControlPlane's
	// namespace, with the broker's management API: url (https://, the API's
	// base), username and password of a broker administrator, and
	// optionally ca.crt to check the API's certificate against. With it,
	// each compute cluster also gets a broker user of its own,
	// nova-compute-<cluster>, with the password of its Keystone user and
	// every right on the vhost of transportURLSecretRef, so that one
	// cluster's bus access can be revoked alone. Without it every cluster
	// logs in to the broker as the user of transportURLSecretRef. Only
	// with credentials PerCluster.
	// +optional
	BrokerAdminSecretRef *anvilmeta.LocalObjectReference `json:"brokerAdminSecretRef,omitempty"`
}

// ComputeCredentials is whom compute clusters authenticate as.
type ComputeCredentials string

const (
	// SharedCredentials hands every compute cluster the nova service user.
	SharedCredentials ComputeCredentials = "Shared"
	// PerClusterCredentials gives each compute cluster a user of its own.
	PerClusterCredentials ComputeCredentials = "PerCluster"
)

// HypervisorOperatorSpec is the opt-in marker for the hypervisor
// operator's account: once the Nova is Ready, Anvil creates the Keystone
// user hypervisor-operator with the role admin on the project
// service-hypervisor-operator, and delivers its auth Secret beside the
// Nova and to every compute cluster of the Nova's pools. Unsetting it
// deletes all of that again. The Secret is a cloud-admin credential.
type HypervisorOperatorSpec struct{}

// ControlPlaneStatus is the observed state of a ControlPlane.
type ControlPlaneStatus struct {
	anvilmeta.CommonStatus `json:",inline"`

	// ComputeClusters lists, per compute cluster that receives the
	// contract, the hash its mirror carries and the hash each pool there
	// has rolled out: what a rotation has reached.
	// +optional
	// +listType=map
	// +listMapKey=name
	ComputeClusters []ComputeClusterStatus `json:"computeClusters,omitempty"`

	// GeneratedSecrets lists the Secrets whose value Anvil generated for
	// this ControlPlane (the metadata shared secret, the hypervisor
	// operator's and each compute cluster's password), each with a digest
	// of that value. Anvil uses a value only when its digest is listed
	// here: a same-named Secret that merely carries Anvil's ownership
	// marks gets a new value instead, so nobody can choose a password
	// Anvil then sets in Keystone.
	// +optional
	// +listType=map
	// +listMapKey=name
	GeneratedSecrets []GeneratedSecret `json:"generatedSecrets,omitempty"`

	// BrokerUsers lists the compute clusters' own broker users this
	// ControlPlane created (remoteCompute.brokerAdminSecretRef), each with
	// the admin Secret it was created through: a user is deleted through
	// that Secret when its cluster leaves, PerCluster is turned off, the
	// reference changes or goes, or the ControlPlane is deleted.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	BrokerUsers []BrokerUser `json:"brokerUsers,omitempty"`

	// Deliveries is the inventory of the copies this ControlPlane wrote to
	// compute clusters and has not deleted since: the contract's mirror,
	// the hypervisor operator's auth copy and the metadata shared secret's
	// copy, each with the hash of the data last written. A copy that a
	// pass no longer delivers is deleted by comparing what the pass
	// delivers with this list; the ControlPlane is the only one that
	// deletes what it delivered.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	// +listMapKey=namespace
	// +listMapKey=name
	Deliveries []DeliveredCopy `json:"deliveries,omitempty"`
}

// DeliveredCopy records one object a ControlPlane wrote to a compute
// cluster.
type DeliveredCopy struct {
	// Cluster is the compute cluster, as a targetClusterRef names it.
	Cluster string `json:"cluster"`
	// Kind of the object; Anvil delivers Secrets only.
	// +kubebuilder:validation:Enum=Secret
	Kind string `json:"kind"`
	// Namespace of the copy on the compute cluster.
	Namespace string `json:"namespace"`
	// Name of the copy.
	Name string `json:"name"`
	// Hash is the SHA-256 digest of the data last written, the value the
	// contract's hash is for the mirror.
	// +optional
	Hash string `json:"hash,omitempty"`
}

// BrokerUser records one compute cluster's own broker user.
type BrokerUser struct {
	// Cluster is the compute cluster the user is for.
	Cluster string `json:"cluster"`
	// User is the broker user's name, nova-compute-<cluster>.
	User string `json:"user"`
	// AdminSecret names the broker admin Secret, in the ControlPlane's
	// namespace, the user was created through.
	AdminSecret string `json:"adminSecret"`
}

// GeneratedSecret records one value Anvil generated.
type GeneratedSecret struct {
	// Name of the Secret, in the ControlPlane's namespace.
	Name string `json:"name"`
	// Digest is the hex SHA-256 of the Secret's name and the generated
	// value. The value is 192 random bits, so the digest does not reveal
	// it.
	Digest string `json:"digest"`
}

// ComputeClusterStatus is what one compute cluster runs.
type ComputeClusterStatus struct {
	// Name of the cluster, as targetClusterRef names it.
	Name string `json:"name"`
	// ContractHash is the hash of the contract the cluster's mirror
	// carries, as pools put it on their pod template; empty while the
	// mirror could not be written.
	// +optional
	ContractHash string `json:"contractHash,omitempty"`
	// Pools are the Nova's pools on the cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	Pools []PoolRolloutStatus `json:"pools,omitempty"`
}

// PoolRolloutStatus is the contract one pool runs.
type PoolRolloutStatus struct {
	// Name of the NovaCompute.
	Name string `json:"name"`
	// RolledOutContractHash is the pool's status.rolledOutContractHash:
	// the contract hash every pod of its DaemonSet runs.
	// +optional
	RolledOutContractHash string `json:"rolledOutContractHash,omitempty"`
}

// ControlPlane declares one OpenStack cloud. Anvil projects the services it
// runs (Nova) as child resources and delivers what compute clusters need to
// join it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=controlplanes,scope=Namespaced
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Nova",type=string,JSONPath=`.status.conditions[?(@.type=="NovaReady")].reason`
// +kubebuilder:printcolumn:name="Rotation",type=string,JSONPath=`.status.conditions[?(@.type=="ComputeRotationComplete")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec ControlPlaneSpec `json:"spec,omitempty"`

	// Status is the observed state, written only by Anvil.
	// +optional
	Status ControlPlaneStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ControlPlaneList is a list of ControlPlane objects.
type ControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControlPlane `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &ControlPlane{}, &ControlPlaneList{})
}
