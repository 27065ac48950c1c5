package v1alpha1

// Condition types of a NeutronMetadataAgent, in pipeline order; the steps
// run one after the other and Ready is True only while every one is True.
// A target cluster Anvil cannot use, the agent's or the chassis's, is
// reported on ChassisReady under anvilmeta.TargetClusterUnavailableReason,
// also while a deleting agent waits for its cluster.
const (
	// ChassisReadyCondition reports the referenced OVNChassis and its
	// OVNCentral: the nodes, the southbound address and the client Secret
	// the agent takes from them.
	ChassisReadyCondition = "ChassisReady"
	// SecretsReadyCondition reports the Secrets the agent references and
	// the ConfigMap rendered from the spec.
	SecretsReadyCondition = "SecretsReady"
	// DaemonSetReadyCondition reports the DaemonSet
	// {agent}-metadata-agent.
	DaemonSetReadyCondition = "DaemonSetReady"
)

// Reasons of ChassisReady, in the order the step checks them.
const (
	// ChassisResolvedReason: the chassis and its central publish what the
	// agent needs; the message names the southbound address.
	ChassisResolvedReason = "ChassisResolved"
	// ChassisNotFoundReason: no OVNChassis of that name in the agent's
	// namespace; asked again every 15 seconds.
	ChassisNotFoundReason = "ChassisNotFound"
	// ChassisReadErrorReason: reading the OVNChassis failed.
	ChassisReadErrorReason = "ChassisReadError"
	// ChassisOnAnotherClusterReason: the agent's targetClusterRef and the
	// chassis's differ, so the agent could never run beside the chassis.
	// It waits for a change instead of asking again.
	ChassisOnAnotherClusterReason = "ChassisOnAnotherCluster"
	// CentralNotFoundReason: the chassis's OVNCentral does not exist;
	// asked again every 15 seconds.
	CentralNotFoundReason = "CentralNotFound"
	// CentralReadErrorReason: reading the chassis's OVNCentral failed.
	CentralReadErrorReason = "CentralReadError"
	// CentralNotExternallyReachableReason: the chassis and the central are
	// on different clusters, and the central does not publish its
	// southbound database outside its cluster. It waits for the central
	// to change.
	CentralNotExternallyReachableReason = "CentralNotExternallyReachable"
	// CentralNotReadyReason: the central has not published the southbound
	// address the agent connects to yet; asked again every 15 seconds.
	CentralNotReadyReason = "CentralNotReady"
	// ChassisNotReadyReason: the chassis has not published the client
	// Secret the agent mounts yet; asked again every 15 seconds.
	ChassisNotReadyReason = "ChassisNotReady"
)

// Reasons of SecretsReady.
const (
	// SecretsAvailableReason: every referenced Secret and key exists, or
	// none is referenced, and the configuration is rendered.
	SecretsAvailableReason = "SecretsAvailable"
	// WaitingForNovaSharedSecretReason: the Secret or key of
	// sharedSecretRef does not exist yet on the agent's cluster; asked
	// again every 15 seconds.
	WaitingForNovaSharedSecretReason = "WaitingForNovaSharedSecret"
	// WaitingForNovaMetadataCAReason: the Secret or key of
	// caBundleSecretRef does not exist yet on the agent's cluster; the
	// message names the key; asked again every 15 seconds.
	WaitingForNovaMetadataCAReason = "WaitingForNovaMetadataCA"
	// SharedSecretMismatchReason: the shared secret differs from the one
	// the Nova of the ControlPlane whose Neutron runs on the chassis's
	// central checks signatures with, so Nova would refuse every request
	// the agent signs. The DaemonSet is left as it was; asked again every
	// 15 seconds, since a rotation passes through this state until the
	// copy is rewritten.
	SharedSecretMismatchReason = "SharedSecretMismatch"
	// SharedSecretUnusableReason: the shared secret holds a '$'. The agent
	// reads it from an OS_ environment variable, which oslo.config expands
	// like a file's value, so it would sign with another string than the
	// Secret holds. The DaemonSet is left as it was; asked again every 15
	// seconds, since the fix is a new value in the Secret.
	SharedSecretUnusableReason = "SharedSecretUnusable"
	// ConfigErrorReason: the configuration cannot be rendered or its
	// ConfigMap cannot be written.
	ConfigErrorReason = "ConfigError"
)

// Reasons of DaemonSetReady.
const (
	// DaemonSetReadyReason: every selected node runs a ready, current
	// agent pod; no selected node counts as ready.
	DaemonSetReadyReason = "DaemonSetReady"
	// DaemonSetProgressingReason: the rollout is not complete; asked again
	// every 10 seconds.
	DaemonSetProgressingReason = "DaemonSetProgressing"
	// DaemonSetErrorReason: writing or reading the DaemonSet failed.
	DaemonSetErrorReason = "DaemonSetError"
)

// Labels and annotations of an agent's inputs and children.
const (
	// MetadataSharedSecretMirrorLabel marks the ControlPlane's copy of the
	// metadata shared secret on a compute cluster. Only Secrets with the
	// value "true" are ever reaped; an unlabelled one is the user's.
	MetadataSharedSecretMirrorLabel = "neutron.openstack.c5c3.io/metadata-shared-secret-mirror"
	// metadataSharedSecretMirrorSuffix ends the name of a ControlPlane's
	// copy; see MetadataSharedSecretMirrorName.
	metadataSharedSecretMirrorSuffix = "-nova-metadata-agent-secret"
	// MetadataSecretHashAnnotation on the pod template carries a hash of
	// the shared secret's value, never the value, so that a rotation rolls
	// the pods that read it from their environment.
	MetadataSecretHashAnnotation = "neutron.c5c3.io/metadata-secret-hash"
)

// MetadataSharedSecretMirrorName is the name of the copy of the metadata
// shared secret that the ControlPlane named controlPlane delivers to the
// compute clusters of its agents: "{controlPlane}-nova-metadata-agent-secret".
func MetadataSharedSecretMirrorName(controlPlane string) string {
	return controlPlane + metadataSharedSecretMirrorSuffix
}
