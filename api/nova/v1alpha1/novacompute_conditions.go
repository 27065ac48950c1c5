package v1alpha1

import anvilmeta "github.com/anvil/anvil/api/meta"

// Condition types of a NovaCompute. Ready is True only while every step
// condition below is True; ExtraConfigHealthy is reported but not rolled up.
const (
	// NovaReadyCondition reports the referenced Nova and what the pool
	// takes from it: its release, its contract and its service user.
	NovaReadyCondition = "NovaReady"
	// NodesReadyCondition reports the selected nodes and conflicts.
	NodesReadyCondition = "NodesReady"
	// ConfigReadyCondition reports the pool's configuration ConfigMap.
	ConfigReadyCondition = "ConfigReady"
	// PreflightReadyCondition reports the check that the pool's cluster
	// reaches and authenticates to what the contract names, which the
	// DaemonSet waits for.
	PreflightReadyCondition = "PreflightReady"
	// DaemonSetReadyCondition reports the nova-compute DaemonSet's rollout.
	DaemonSetReadyCondition = "DaemonSetReady"
	// AggregatesReadyCondition reports the zone aggregates and
	// tenant_filter_tests.
	AggregatesReadyCondition = "AggregatesReady"
	// ServicesReadyCondition reports the nodes' nova-compute services,
	// host mapping and drains.
	ServicesReadyCondition = "ServicesReady"
	// TraitsReadyCondition reports the custom traits of the nodes.
	TraitsReadyCondition = "TraitsReady"
	// ExtraConfigHealthyCondition reports extraConfig keys that override
	// options the pool renders.
	ExtraConfigHealthyCondition = "ExtraConfigHealthy"
)

// Reasons of NovaReady on a NovaCompute.
const (
	// NovaResolvedReason: the Nova exists and the pool has what it needs.
	NovaResolvedReason = "NovaResolved"
	// NovaNotFoundReason: no Nova of that name in the pool's namespace.
	NovaNotFoundReason = "NovaNotFound"
	// WaitingForInstalledReleaseReason: the Nova reports no installed
	// release yet, so the default image is unknown.
	WaitingForInstalledReleaseReason = "WaitingForInstalledRelease"
	// ComputeConfigNotPublishedReason: the Nova has not published its
	// compute contract yet.
	ComputeConfigNotPublishedReason = "ComputeConfigNotPublished"
	// WaitingForServiceUserSecretReason: the Nova's service user Secret or
	// key is missing.
	WaitingForServiceUserSecretReason = "WaitingForServiceUserSecret"
	// NovaErrorReason: reading the Nova or its inputs failed.
	NovaErrorReason = "NovaError"
	// NovaReady also reads KeystoneEndpointNotAllowedReason, the Nova's
	// reason of the same name: the pool authenticates at the Nova's
	// keystoneEndpoint, so it checks the host itself before any OpenStack
	// call, in case the Nova published its contract under an earlier spec.
)

// Reasons of NodesReady.
const (
	// NodesResolvedReason: the selected nodes are known.
	NodesResolvedReason = "NodesResolved"
	// NoMatchingNodesReason: no node matches the selector.
	NoMatchingNodesReason = "NoMatchingNodes"
	// NodeConflictReason: another pool holds some selected nodes.
	NodeConflictReason = "NodeConflict"
	// NodesForbiddenReason: the pool may not list the cluster's nodes.
	NodesForbiddenReason = "NodesForbidden"
	// NodeListErrorReason: listing the nodes failed otherwise.
	NodeListErrorReason = "NodeListError"
)

// Reasons of ConfigReady.
const (
	// ConfigRenderedReason: the configuration ConfigMap is current.
	ConfigRenderedReason = "ConfigRendered"
	// WaitingForComputeConfigReason: the contract Secret is absent in the
	// pool's namespace on the pool's cluster.
	WaitingForComputeConfigReason = "WaitingForComputeConfig"
	// ComputeConfigIncompleteReason: the contract lacks a required key.
	ComputeConfigIncompleteReason = "ComputeConfigIncomplete"
	// ComputeConfigNotDeliveredReason: the pool runs on another cluster
	// than its Nova, which a ControlPlane projects, and the Secret of the
	// contract's name there is not that ControlPlane's delivered copy
	// (mirror label and ownership labels), so nothing vouches for it. The
	// pool mounts nothing until it is deleted and the ControlPlane
	// delivers the contract.
	ComputeConfigNotDeliveredReason = "ComputeConfigNotDelivered"
	// ConfigErrorReason: the configuration cannot be rendered or written.
	ConfigErrorReason = "ConfigError"
)

// Reasons of PreflightReady. A failure reason names the endpoint and the
// layer that failed (TCP, TLS or authentication), never a credential.
const (
	// PreflightPassedReason: a Job on the pool's cluster, from the pool's
	// image and contract, reached the bus, Keystone and Placement.
	PreflightPassedReason = "PreflightPassed"
	// PreflightRunningReason: the check for the current contract runs.
	PreflightRunningReason = "PreflightRunning"
	// NoNodeToCheckFromReason: the pool has no node yet; the check runs
	// on the first one, before the DaemonSet is written.
	NoNodeToCheckFromReason = "NoNodeToCheckFrom"
	// BusUnreachableReason: no TCP connection to any bus host.
	BusUnreachableReason = "BusUnreachable"
	// BusTLSFailedReason: the bus's certificate does not verify against
	// the contract's CA, or the handshake failed.
	BusTLSFailedReason = "BusTLSFailed"
	// BusAuthenticationFailedReason: the bus refused the contract's user
	// and password, or its virtual host.
	BusAuthenticationFailedReason = "BusAuthenticationFailed"
	// KeystoneUnreachableReason: no TCP connection to Keystone's auth_url.
	KeystoneUnreachableReason = "KeystoneUnreachable"
	// KeystoneTLSFailedReason: Keystone's certificate does not verify.
	KeystoneTLSFailedReason = "KeystoneTLSFailed"
	// KeystoneAuthenticationFailedReason: Keystone refused the service
	// user's password.
	KeystoneAuthenticationFailedReason = "KeystoneAuthenticationFailed"
	// PlacementUnreachableReason: Placement, as Keystone's catalog or the
	// contract's endpoint_override names it, cannot be reached.
	PlacementUnreachableReason = "PlacementUnreachable"
	// PlacementTLSFailedReason: Placement's certificate does not verify.
	PlacementTLSFailedReason = "PlacementTLSFailed"
	// PreflightErrorReason: the check could not run or report (its pod
	// did not start, it ended without a known result, or its Job is not
	// the pool's); the Job's log on the pool's cluster says more.
	PreflightErrorReason = "PreflightError"
	// WaitingForPreflightReason (on DaemonSetReady): the DaemonSet is not
	// written, or not rolled to the new contract, until the check passes.
	WaitingForPreflightReason = "WaitingForPreflight"
)

// Reasons of DaemonSetReady.
const (
	// DaemonSetReadyReason: every node runs a ready, current pod.
	DaemonSetReadyReason = "DaemonSetReady"
	// DaemonSetProgressingReason: the rollout is not complete.
	DaemonSetProgressingReason = "DaemonSetProgressing"
	// DaemonSetErrorReason: writing or reading the DaemonSet failed.
	DaemonSetErrorReason = "DaemonSetError"
	// RefusedByPolicyReason: the pool breaks the workload policy; see
	// anvilmeta.RefusedByPolicyReason.
	RefusedByPolicyReason = anvilmeta.RefusedByPolicyReason
	// NamespaceNotOptedInReason: the pool's namespace has not opted in;
	// see anvilmeta.NamespaceNotOptedInReason.
	NamespaceNotOptedInReason = anvilmeta.NamespaceNotOptedInReason
)

// PrivilegedPoolsLabel opts a management namespace in to pools; it is
// anvilmeta.PrivilegedNamespaceLabel, which every privileged kind obeys.
const PrivilegedPoolsLabel = anvilmeta.PrivilegedNamespaceLabel

// Reasons of AggregatesReady.
const (
	// AggregatesEnsuredReason: every aggregate exists and holds its hosts.
	AggregatesEnsuredReason = "AggregatesEnsured"
	// NodesOutsideZoneAggregateReason: the aggregates exist, and some hosts
	// are not in their zone's aggregate yet; the hypervisor operator adds
	// them while it onboards them.
	NodesOutsideZoneAggregateReason = "NodesOutsideZoneAggregate"
	// NodesWithoutZoneReason: a selected node has no zone label.
	NodesWithoutZoneReason = "NodesWithoutZone"
	// AggregateZoneMismatchReason: an aggregate of a zone's name has
	// another availability zone.
	AggregateZoneMismatchReason = "AggregateZoneMismatch"
	// WaitingForAggregateReason: another writer created the aggregate at
	// the same time.
	WaitingForAggregateReason = "WaitingForAggregate"
	// ComputeAPIErrorReason: a call to Keystone or the Compute API failed.
	ComputeAPIErrorReason = "ComputeAPIError"
	// NovaComputeListErrorReason: listing the Nova's pools failed.
	NovaComputeListErrorReason = "NovaComputeListError"
)

// Reasons of ServicesReady.
const (
	// ServicesUpReason: every held node's service is up and mapped.
	ServicesUpReason = "ServicesUp"
	// DrainingReason: nodes are draining; the message counts their servers.
	DrainingReason = "Draining"
	// WaitingForServicesReason: some nodes have no service yet.
	WaitingForServicesReason = "WaitingForServices"
	// WaitingForHostMappingReason: some hosts are not mapped into a cell.
	WaitingForHostMappingReason = "WaitingForHostMapping"
	// HostDiscoveryErrorReason: the discovery Job cannot run.
	HostDiscoveryErrorReason = "HostDiscoveryError"
	// ServicesDownReason: some services report down.
	ServicesDownReason = "ServicesDown"
	// ServiceNotAdoptedReason: Nova lists, for some nodes' host names, a
	// service the pool did not adopt (status.nodes[].adoptedServiceID):
	// one whose id differs from the adopted one, or, for a leaving node,
	// one the pool never adopted because no pod of it was seen running
	// on the node. The pool never disables or deletes such a
	// service; a leaving node is let go with its service left as it is.
	ServiceNotAdoptedReason = "ServiceNotAdopted"
	// PodListErrorReason: listing the pool's pods failed.
	PodListErrorReason = "PodListError"
)

// Reasons of TraitsReady.
const (
	// TraitsAppliedReason: every node's Hypervisor shows its traits.
	TraitsAppliedReason = "TraitsApplied"
	// WaitingForHypervisorOperatorReason: the lists are written; the
	// hypervisor operator has not applied every one yet.
	WaitingForHypervisorOperatorReason = "WaitingForHypervisorOperator"
	// NodesWithCustomTraitsAnnotationReason: some nodes carry the hypervisor
	// operator's custom-traits annotation, which would overwrite the list.
	NodesWithCustomTraitsAnnotationReason = "NodesWithCustomTraitsAnnotation"
	// NoTraitsReason: the pool declares no traits.
	NoTraitsReason = "NoTraits"
	// TraitsErrorReason: creating a trait or writing a Hypervisor failed.
	TraitsErrorReason = "TraitsError"
	// InvalidTraitsReason: the pool names a trait that is not a custom
	// trait (it got past admission); no trait is created or written
	// until the spec is fixed.
	InvalidTraitsReason = "InvalidTraits"
)

// Reasons of ExtraConfigHealthy.
const (
	// NoOwnedKeysOverriddenReason: extraConfig overrides no rendered key.
	NoOwnedKeysOverriddenReason = "NoOwnedKeysOverridden"
	// OwnedKeysOverriddenReason: extraConfig overrides a key the pool
	// renders from its spec.
	OwnedKeysOverriddenReason = "OwnedKeysOverridden"
)

// Event reasons of a NovaCompute.
const (
	// ComputeServiceDisabledEvent: a draining node's service was disabled.
	ComputeServiceDisabledEvent = "ComputeServiceDisabled"
	// ComputeServiceDeletedEvent: a released node's service was deleted.
	ComputeServiceDeletedEvent = "ComputeServiceDeleted"
	// ComputeServiceNotAdoptedEvent (Warning): a node left the pool and
	// Nova lists, for its host name, a service the pool did not adopt;
	// the pool let the node go and left that service as it is, neither
	// disabled nor deleted.
	ComputeServiceNotAdoptedEvent = "ComputeServiceNotAdopted"
	// AggregateCreatedEvent: the pool created an aggregate.
	AggregateCreatedEvent = "AggregateCreated"
	// AggregateDeletedEvent: the pool deleted an empty, unneeded aggregate.
	AggregateDeletedEvent = "AggregateDeleted"
	// AggregateKeptEvent: an unneeded aggregate carries foreign metadata.
	AggregateKeptEvent = "AggregateKept"
	// NodeConflictEvent: a newly selected node is held by another pool.
	NodeConflictEvent = "NodeConflict"
	// HostDiscoveryStartedEvent: the pool created the discovery Job.
	HostDiscoveryStartedEvent = "HostDiscoveryStarted"
	// HostDiscoveryFailedEvent: the discovery Job failed.
	HostDiscoveryFailedEvent = "HostDiscoveryFailed"
	// PreflightFailedEvent (Warning): the preflight check failed, under
	// the reason PreflightReady reports.
	PreflightFailedEvent = "PreflightFailed"
	// PreflightPassedEvent: the preflight check of a new contract passed.
	PreflightPassedEvent = "PreflightPassed"
	// ExtraConfigOwnedKeyOverrideEvent: extraConfig overrides a rendered key.
	ExtraConfigOwnedKeyOverrideEvent = "ExtraConfigOwnedKeyOverride"
	// FailedBuildsEvent (Warning): a node's failed_builds counter rose to
	// spec.failedBuildsWarningThreshold or above. It is recorded once per
	// rise; the counter must fall below the threshold, as it does on the
	// next build that succeeds there, before the node can warn again.
	FailedBuildsEvent = "FailedBuilds"
)

// Finalizers, labels and annotations of a pool.
const (
	// ComputeDrainFinalizer holds a pool until every node is drained.
	ComputeDrainFinalizer = "nova.openstack.c5c3.io/compute-drain"
	// ComputeConfigHashAnnotation on the pod template carries the
	// contract's hash, so a rotated contract rolls the pods.
	ComputeConfigHashAnnotation = "nova.openstack.c5c3.io/compute-config-hash"
	// CustomTraitsAnnotation is the hypervisor operator's Node annotation
	// that overrides a Hypervisor's custom traits.
	CustomTraitsAnnotation = "nova.openstack.cloud.sap/custom-traits"
	// AggregateMarkerKey marks an aggregate the pool created, with the
	// value <namespace>/<nova>.
	AggregateMarkerKey = "c5c3.io:nova"
	// TenantFilterTestsAggregate is the zone-less aggregate every pool of
	// a Nova keeps while any is live.
	TenantFilterTestsAggregate = "tenant_filter_tests"
	// DisabledReasonPrefix starts the reason a pool disables a service
	// with: "c5c3.io: leaving NovaCompute <namespace>/<name>".
	DisabledReasonPrefix = "c5c3.io: leaving NovaCompute "
	// PoolConfigKey is the key of the pool's ConfigMap.
	PoolConfigKey = "compute-pool.conf"
	// DefaultComputeImageRepository is the default nova-compute image.
	DefaultComputeImageRepository = "ghcr.io/c5c3/nova-compute"
	// DiscoverHostsSuffix names the Nova's discovery Job.
	DiscoverHostsSuffix = "-discover-hosts"
	// ManageConfigSuffix names the Secret with the Nova's database
	// configuration that nova-manage reads.
	ManageConfigSuffix = "-manage-config"
)
