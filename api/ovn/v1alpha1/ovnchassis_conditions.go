package v1alpha1

// Condition types of an OVNChassis, in pipeline order; the steps run one
// after the other and Ready is True only while every one is True. VPAReady,
// declared with the OVNCentral's conditions, is reported between
// ControllerReady and MaintenanceReady. A target cluster Anvil cannot use
// is reported on CentralReady under anvilmeta.TargetClusterUnavailableReason.
const (
	// CentralReadyCondition reports the referenced OVNCentral, the
	// addresses the chassis take from it, and the client Secret they
	// mount.
	CentralReadyCondition = "CentralReady"
	// NodesReadyCondition reports the selected nodes and the ConfigMap of
	// their per-node entries.
	NodesReadyCondition = "NodesReady"
	// OVSReadyCondition reports the Open vSwitch DaemonSet {chassis}-ovs.
	OVSReadyCondition = "OVSReady"
	// ControllerReadyCondition reports the DaemonSet
	// {chassis}-ovn-controller.
	ControllerReadyCondition = "ControllerReady"
	// MaintenanceReadyCondition reports the per-node apply, evacuate and
	// chassis-del Jobs.
	MaintenanceReadyCondition = "MaintenanceReady"
)

// Reasons of CentralReady.
const (
	// CentralResolvedReason: the central publishes what the chassis need;
	// the message names the address ovn-controller connects to.
	CentralResolvedReason = "CentralResolved"
	// CentralNotFoundReason: no OVNCentral of that name in the chassis's
	// namespace; asked again every 15 seconds.
	CentralNotFoundReason = "CentralNotFound"
	// CentralReadErrorReason: reading the OVNCentral failed.
	CentralReadErrorReason = "CentralReadError"
	// CentralNotExternallyReachableReason: the chassis and the central are
	// on different clusters, and the central does not publish both its
	// databases outside its cluster. It waits for the central to change.
	CentralNotExternallyReachableReason = "CentralNotExternallyReachable"
	// CentralNotReadyReason: the central has not published the southbound
	// address, the relay's node address or the client Secret the chassis
	// need yet; asked again every 15 seconds.
	CentralNotReadyReason = "CentralNotReady"
	// CentralUpgradingReason: the central does not run its resolved image
	// yet, so the chassis wait for its upgrade to finish.
	CentralUpgradingReason = "CentralUpgrading"
	// CentralPlacedElsewhereReason: the central is placed on a compute
	// cluster. Chassis identities are issued by cert-manager next to the
	// central's CA, which Anvil reaches only on the management cluster;
	// terminal until the central or the chassis changes.
	CentralPlacedElsewhereReason = "CentralPlacedElsewhere"
	// ClientSecretPendingReason: the central's client Secret does not exist
	// yet on the central's cluster.
	ClientSecretPendingReason = "ClientSecretPending"
	// ClientSecretIncompleteReason: the central's client Secret lacks
	// tls.crt, tls.key or ca.crt; the message names the first missing key.
	ClientSecretIncompleteReason = "ClientSecretIncomplete"
	// ClientSecretReadErrorReason: reading the central's client Secret
	// failed.
	ClientSecretReadErrorReason = "ClientSecretReadError"
	// ClientSecretCopyFailedReason: the copy {chassis}-ovn-client cannot be
	// written, for example because a same-named Secret is not this
	// chassis's.
	ClientSecretCopyFailedReason = "ClientSecretCopyFailed"
)

// Reasons of NodesReady.
const (
	// NodesRenderedReason: every selected node's entry is rendered into the
	// nodes ConfigMap; the message counts them and those leaving.
	NodesRenderedReason = "NodesRendered"
	// NoMatchingNodesReason: no node matches the selector. Both ConfigMaps
	// are still written, and a node that comes to match is picked up by
	// the Node watch.
	NoMatchingNodesReason = "NoMatchingNodes"
	// NodeListErrorReason: listing the nodes failed.
	NodeListErrorReason = "NodeListError"
	// NodesErrorReason: the entries cannot be rendered or the ConfigMaps
	// cannot be written.
	NodesErrorReason = "NodesError"
	// IdentityPendingReason: cert-manager has not issued the identity of
	// every selected node yet; their ovn-controller waits, and the pass
	// asks again.
	IdentityPendingReason = "IdentityPending"
	// IdentityErrorReason: writing, claiming, copying or removing a node's
	// identity failed, or a same-named object Anvil does not own is in
	// the way.
	IdentityErrorReason = "IdentityError"
)

// Reasons of OVSReady and ControllerReady.
const (
	// DaemonSetReadyReason: every selected node runs a ready, current pod;
	// no selected node counts as ready.
	DaemonSetReadyReason = "DaemonSetReady"
	// DaemonSetProgressingReason: the rollout is not complete; asked again
	// every 10 seconds.
	DaemonSetProgressingReason = "DaemonSetProgressing"
	// DaemonSetErrorReason: writing or reading the DaemonSet failed.
	DaemonSetErrorReason = "DaemonSetError"
)

// Reasons of MaintenanceReady.
const (
	// MaintenanceIdleReason: no node needs a maintenance Job.
	MaintenanceIdleReason = "MaintenanceIdle"
	// MaintenanceRunningReason: maintenance Jobs are running; they do not
	// block the other nodes.
	MaintenanceRunningReason = "MaintenanceRunning"
	// MaintenanceDeferredReason: a node needs a Job that cannot start yet,
	// because the database address it needs is not published; asked again
	// every 15 seconds.
	MaintenanceDeferredReason = "MaintenanceDeferred"
	// MaintenanceJobFailedReason: a maintenance Job failed; the walk over
	// the nodes stops until the Job is deleted, which runs it again.
	MaintenanceJobFailedReason = "MaintenanceJobFailed"
	// MaintenanceErrorReason: writing or reading a Job or the status
	// failed.
	MaintenanceErrorReason = "MaintenanceError"
)
