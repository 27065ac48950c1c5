package v1alpha1

// Condition types of a ControlPlane.
const (
	// NovaReadyCondition reports the projected Nova and the delivery of its
	// contract to every compute cluster.
	NovaReadyCondition = "NovaReady"
	// ComputeCatalogReadyCondition reports the compute service Anvil
	// registers in the Keystone catalog for services.keystone.region: True
	// when Anvil's registration is current or when Anvil does not manage
	// the region's compute catalog, False while Keystone fails or the admin
	// credentials are missing. It is part of Ready, because clients and
	// other services find Nova's API only through the catalog.
	ComputeCatalogReadyCondition = "ComputeCatalogReady"
	// ComputeRotationCompleteCondition reports whether every compute
	// cluster that receives the contract runs it: True once every pool
	// there has rolled out the contract its mirror carries. It is not part
	// of Ready, because an OnDelete pool may take days to follow.
	ComputeRotationCompleteCondition = "ComputeRotationComplete"
)

// Reasons of ComputeRotationComplete.
const (
	// RotationCompleteReason: every compute cluster's pools run the
	// contract that cluster's mirror carries.
	RotationCompleteReason = "RotationComplete"
	// RotationInProgressReason: some cluster's mirror is not written yet,
	// or some pool there has not rolled it out; the message reads
	// "N of M clusters on <hash>" and names the clusters that are behind.
	RotationInProgressReason = "RotationInProgress"
	// NoComputeClustersReason: no pool of the Nova runs on another
	// cluster, so there is nothing to roll out there.
	NoComputeClustersReason = "NoComputeClusters"
)

// Reasons of ComputeCatalogReady, and the event of its removal.
const (
	// CatalogRegisteredReason: the compute service Anvil created for this
	// ControlPlane (type compute, name nova, its description the
	// ControlPlane's mark) has exactly the endpoints the spec asks for in
	// the region: internal, and public when services.nova.publicEndpoint is
	// set. The message names the service ID. A pass that wrote to the
	// catalog records a Normal event of this reason saying what it wrote.
	CatalogRegisteredReason = "CatalogRegistered"
	// CatalogNotManagedReason: Anvil does not manage the region's compute
	// catalog and writes nothing there, because services.nova is not set,
	// services.keystone.adminCredentialsSecretRef is not set, or a compute
	// service Anvil did not create for this ControlPlane already has an
	// endpoint in the region. The message says which, naming that
	// service's ID; the last case is looked at again every minute.
	CatalogNotManagedReason = "CatalogNotManaged"
	// CatalogErrorReason: a Keystone call failed, or Keystone could not be
	// reached; retried with backoff. The message is the failed operation
	// with its HTTP status and request ID, never a URL or a response body.
	CatalogErrorReason = "CatalogError"
	// CatalogRemovedEvent is the Normal event recorded when Anvil deletes
	// the compute service and endpoints it registered: the ControlPlane is
	// deleted, services.nova is unset, or another compute service holds
	// the region.
	CatalogRemovedEvent = "CatalogRemoved"
)

// GeneratedSecretReplacedEvent is the Warning event recorded when a Secret
// whose value Anvil generates carried a value Anvil did not generate (no
// digest in status.generatedSecrets matches it) and Anvil gave it a new
// one. The note names the Secret, never a value.
const GeneratedSecretReplacedEvent = "GeneratedSecretReplaced"

// BrokerUserAbandonedEvent is the Warning event recorded when a compute
// cluster's broker user is to be deleted but the admin Secret it was created
// through is gone: Anvil can no longer reach the broker as its
// administrator, forgets the user and names it, so that the broker's
// administrator deletes it.
const BrokerUserAbandonedEvent = "BrokerUserAbandoned"

// Reasons of NovaReady.
const (
	// NovaMetadataAgentSecretErrorReason: the copy of the metadata shared
	// secret could not be written to a cluster whose metadata agents name
	// it, for example because a same-named Secret there is not this
	// ControlPlane's. The message names the Secret and the cluster; the
	// other clusters are still served.
	NovaMetadataAgentSecretErrorReason = "NovaMetadataAgentSecretError"
	// NovaReadyReason: the child Nova is Ready and every compute cluster
	// that hosts one of its pools has the current contract.
	NovaReadyReason = "NovaReady"
	// NovaNotManagedReason: services.nova is not set; NovaReady is True.
	NovaNotManagedReason = "NovaNotManaged"
	// WaitingForRemoteMessagingReason: the handed-over Secret or key is
	// missing or empty; no child is written in that pass.
	WaitingForRemoteMessagingReason = "WaitingForRemoteMessaging"
	// NovaRemoteMessagingError: the handed-over URL is not rabbit://, or
	// writing the child's copy failed. The message names the scheme only.
	NovaRemoteMessagingErrorReason = "NovaRemoteMessagingError"
	// WaitingForMessagingReason: the bus Secret or key, or its CA bundle,
	// is missing.
	WaitingForMessagingReason = "WaitingForMessaging"
	// WaitingForNovaReason: the child Nova is not Ready for the applied
	// generation yet.
	WaitingForNovaReason = "WaitingForNova"
	// WaitingForComputeConfigReason: the contract the mirrors carry cannot
	// be rendered from the Nova's inputs yet, or the in-cluster contract
	// the metadata agents' copy comes from is not published yet; the
	// message names the input or the Secret.
	WaitingForComputeConfigReason = "WaitingForComputeConfig"
	// NovaComputeConfigErrorReason: a mirror could not be written, for
	// example because a Secret of its name on a compute cluster is not the
	// ControlPlane's; the message names it. Other clusters are still served.
	NovaComputeConfigErrorReason = "NovaComputeConfigError"
	// NovaProjectionRejectedReason: the apiserver refused the projected
	// Nova; the message carries the admission error.
	NovaProjectionRejectedReason = "NovaProjectionRejected"
	// NovaErrorReason: any other failure while projecting the Nova, or an
	// input of the contract the Nova would refuse too, whose field the
	// message names.
	NovaErrorReason = "NovaError"
	// WaitingForAdminCredentialsReason: the hypervisor operator's account
	// is requested, or the compute catalog is to be registered (then on
	// ComputeCatalogReady), but services.keystone.adminCredentialsSecretRef
	// names a Secret that does not exist or lacks password; the message
	// names it.
	WaitingForAdminCredentialsReason = "WaitingForAdminCredentials"
	// WaitingForHypervisorOperatorCredentialsReason: the credentials
	// Secret of the hypervisor operator's account has just been generated
	// and cannot be read back yet; the message names it.
	WaitingForHypervisorOperatorCredentialsReason = "WaitingForHypervisorOperatorCredentials"
	// HypervisorOperatorErrorReason: provisioning, copying or pruning the
	// hypervisor operator's account failed: Keystone refused or could not
	// be reached, an account or Secret of that name is not the
	// ControlPlane's, or a copy could not be written. The message names the
	// object, and the namespace and cluster of a copy.
	HypervisorOperatorErrorReason = "HypervisorOperatorError"
	// ComputeCredentialsErrorReason: with PerCluster credentials, a compute
	// cluster's own Keystone user could not be created, given its roles,
	// or deleted. The message names the cluster.
	ComputeCredentialsErrorReason = "ComputeCredentialsError"
	// WaitingForBrokerAdminReason: remoteCompute.brokerAdminSecretRef
	// names a Secret that does not exist, lacks url, username or password,
	// or whose url is not https://; the message names the Secret and the
	// key.
	WaitingForBrokerAdminReason = "WaitingForBrokerAdmin"
	// BrokerUserErrorReason: a compute cluster's own broker user could not
	// be created, given its rights or deleted, or a broker user of its
	// name is not this ControlPlane's. The message names the cluster.
	BrokerUserErrorReason = "BrokerUserError"
	// KeystoneEndpointNotAllowedReason: a Keystone URL of
	// services.keystone names a host that is not on the operator's
	// --allowed-keystone-hosts, or uses plain http where the entry that
	// admits it does not start with http:// (admission enforces the same).
	// The pass stops before anything is sent there, the admin password
	// included; the message names the field and the host. It is terminal
	// until the spec or the operator's flag changes. A ControlPlane being
	// deleted keeps its finalizer meanwhile: removing its accounts would
	// send the admin password there.
	KeystoneEndpointNotAllowedReason = "KeystoneEndpointNotAllowed"
)

// Names and labels of what a ControlPlane writes.
const (
	// NovaSuffix names the projected Nova: {cp}-nova.
	NovaSuffix = "-nova"
	// NovaMessagingSuffix names the child's bus Secret: {cp}-nova-messaging.
	NovaMessagingSuffix = "-nova-messaging"
	// NovaMessagingCASuffix names the child's CA Secret:
	// {cp}-nova-messaging-ca.
	NovaMessagingCASuffix = "-nova-messaging-ca"
	// NovaRemoteMessagingSuffix names the child's copy of the handed-over
	// URL: {cp}-nova-remote-messaging.
	NovaRemoteMessagingSuffix = "-nova-remote-messaging"
	// NovaMetadataSecretSuffix names the generated metadata shared secret:
	// {cp}-nova-metadata-secret.
	NovaMetadataSecretSuffix = "-nova-metadata-secret"
	// HypervisorOperatorCredentialsSuffix names the generated password of
	// the hypervisor operator's account:
	// {cp}-nova-hypervisor-operator-credentials, key password. Deleting it
	// rotates the password.
	HypervisorOperatorCredentialsSuffix = "-nova-hypervisor-operator-credentials"
	// HypervisorOperatorAuthSuffix names the hypervisor operator's auth
	// Secret and its copies: {cp}-nova-hypervisor-operator-auth.
	HypervisorOperatorAuthSuffix = "-nova-hypervisor-operator-auth"
	// HypervisorOperatorUser is the Keystone user of the account.
	HypervisorOperatorUser = "hypervisor-operator"
	// HypervisorOperatorProject is the account's project, in the admin
	// domain.
	HypervisorOperatorProject = "service-hypervisor-operator"
	// HypervisorOperatorRole is the one role the account holds, on its
	// project: Nova and Placement read it as cloud admin.
	HypervisorOperatorRole = "admin"
	// HypervisorOperatorUserPrefix names, with credentials: PerCluster, a
	// compute cluster's own hypervisor operator user in the admin domain:
	// hypervisor-operator-<cluster>. It holds HypervisorOperatorRole on
	// HypervisorOperatorProject, and that cluster's copy of the auth Secret
	// names it.
	HypervisorOperatorUserPrefix = "hypervisor-operator-"
	// HypervisorOperatorCredentialsInfix names the password Secret of a
	// compute cluster's own hypervisor operator user:
	// {cp}-nova-hypervisor-operator-credentials-<cluster>, key password.
	// Deleting it, or the reissue annotation naming the cluster, gives that
	// user a new password.
	HypervisorOperatorCredentialsInfix = "-nova-hypervisor-operator-credentials-"
	// HypervisorOperatorClusterLabel names the compute cluster a
	// HypervisorOperatorCredentialsInfix Secret belongs to.
	HypervisorOperatorClusterLabel = "c5c3.io/hypervisor-operator-cluster"
	// ComputeCredentialsInfix names the password Secret of a compute
	// cluster's own user: {cp}-nova-compute-credentials-<cluster>, key
	// password. Deleting it reissues that cluster's credentials.
	ComputeCredentialsInfix = "-nova-compute-credentials-"
	// ComputeUserPrefix names a compute cluster's own Keystone user:
	// nova-compute-<cluster>.
	ComputeUserPrefix = "nova-compute-"
	// ComputeClusterLabel names the compute cluster a per-cluster
	// credentials Secret belongs to.
	ComputeClusterLabel = "c5c3.io/compute-cluster"
	// ReissueComputeCredentialsAnnotation, set on a ControlPlane to
	// "<cluster>@<token>", revokes that cluster's credentials (its
	// nova-compute user's and, with the hypervisor operator's account, its
	// hypervisor operator user's) and issues new ones, once per token;
	// other clusters are not touched.
	ReissueComputeCredentialsAnnotation = "c5c3.io/reissue-compute-credentials"
	// ReissueTokenAnnotation on a per-cluster credentials Secret records
	// the token of the request it was issued for.
	ReissueTokenAnnotation = "c5c3.io/reissue-token"
	// AccountsFinalizer holds a ControlPlane while Keystone accounts it
	// created, and their copies on compute clusters, or the compute
	// service it registered in the catalog, still exist.
	AccountsFinalizer = "c5c3.io/keystone-accounts"
	// DeliveriesFinalizer holds a deleted ControlPlane until the copies it
	// delivered to compute clusters (the compute contract's mirror, the
	// hypervisor operator's auth copy and the metadata shared secret's
	// copy) are gone from every registered cluster that can hold them. It
	// is added before the first delivery.
	DeliveriesFinalizer = "c5c3.io/compute-deliveries"
	// DeliveredCopyReapedEvent is the Normal event recorded for each copy
	// a deleted ControlPlane removes from a compute cluster; the note names
	// the cluster and the Secret.
	DeliveredCopyReapedEvent = "DeliveredCopyReaped"
	// ComputeConfigMirrorReapedEvent is the Normal event recorded for each
	// copy of the contract or of the hypervisor operator's auth Secret a
	// ControlPlane deletes from a compute cluster where no pool of its Nova
	// is left; the note names the cluster and the Secret.
	ComputeConfigMirrorReapedEvent = "ComputeConfigMirrorReaped"
	// MetadataSharedSecretMirrorReapedEvent is the Normal event recorded
	// for each copy of the metadata shared secret a ControlPlane deletes
	// from a compute cluster where no metadata agent names it any more.
	MetadataSharedSecretMirrorReapedEvent = "MetadataSharedSecretMirrorReaped"
	// DeliveredCopyAbandonedEvent is the Warning event recorded when a copy
	// the ControlPlane no longer delivers is on a cluster that is no longer
	// registered: Anvil cannot reach it, forgets the copy, and the note
	// names the cluster and the Secret for its owner to remove.
	DeliveredCopyAbandonedEvent = "DeliveredCopyAbandoned"
	// ComputeConfigMirrorLabel marks the copy of the compute contract on a
	// compute cluster. Only Secrets with the value "true" are ever reaped.
	ComputeConfigMirrorLabel = "nova.openstack.c5c3.io/compute-config-mirror"
	// HypervisorOperatorCredentialsLabel, set to "true" on the Nova's
	// namespace of a compute cluster, asks for the copy of the hypervisor
	// operator's auth Secret there. Without it the copy is withheld, and a
	// copy delivered earlier is deleted. The compute cluster's owner sets
	// it, since root on that cluster's nodes can read a cloud-admin
	// password from the copy; the access chart sets it on the privileged
	// namespaces it creates.
	HypervisorOperatorCredentialsLabel = "openstack.c5c3.io/hypervisor-operator-credentials"
	// HypervisorOperatorCopyWithdrawnEvent is the Normal event recorded
	// when Anvil deletes a copy of the hypervisor operator's auth Secret
	// because its namespace no longer carries
	// HypervisorOperatorCredentialsLabel. The note names the cluster and
	// the Secret.
	HypervisorOperatorCopyWithdrawnEvent = "HypervisorOperatorCopyWithdrawn"
	// MaxNameLengthWithNova bounds a ControlPlane's name while services.nova
	// is set: {cp}-nova must fit the Nova's 41 characters.
	MaxNameLengthWithNova = 36
)

// OVNReadyCondition reports the OVNCentral services.neutron.ovn.centralRef
// names: True when it is Ready and has published the addresses and the
// client identity Neutron uses, or when no central is referenced. The
// ControlPlane only reads the central. It is part of Ready.
const OVNReadyCondition = "OVNReady"

// Reasons of OVNReady.
const (
	// OVNNotManagedReason: services.neutron or its ovn block is not set;
	// OVNReady is True.
	OVNNotManagedReason = "OVNNotManaged"
	// OVNCentralNamespaceForbiddenReason: the reference names another
	// namespace than the ControlPlane's; the central is not read.
	OVNCentralNamespaceForbiddenReason = "OVNCentralNamespaceForbidden"
	// OVNCentralNotFoundReason: no such OVNCentral exists.
	OVNCentralNotFoundReason = "OVNCentralNotFound"
	// OVNCentralReadErrorReason: the central could not be read, or the
	// OVNCentral kind is not served; the message says which.
	OVNCentralReadErrorReason = "OVNCentralReadError"
	// OVNCentralNotExternallyReachableReason: the central runs on a
	// compute cluster, and Neutron, which runs beside the ControlPlane,
	// cannot reach it, because spec.northbound.externallyReachable or
	// spec.southbound.externallyReachable is not set.
	OVNCentralNotExternallyReachableReason = "OVNCentralNotExternallyReachable"
	// WaitingForOVNCentralReason: the central is not Ready; its reason and
	// message are relayed.
	WaitingForOVNCentralReason = "WaitingForOVNCentral"
	// OVNEndpointsPendingReason: the central is Ready but an address
	// Neutron needs, or its client Secret's name, is not published; the
	// message lists the fields.
	OVNEndpointsPendingReason = "OVNEndpointsPending"
	// OVNCentralReadyReason: the central is Ready; the message names both
	// addresses Neutron uses.
	OVNCentralReadyReason = "OVNCentralReady"
)
