package v1alpha1

// Condition types of a ControlPlane.
const (
	// NovaReadyCondition reports the projected Nova and the delivery of its
	// contract to every compute cluster.
	NovaReadyCondition = "NovaReady"
)

// Reasons of NovaReady.
const (
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
	// WaitingForComputeConfigReason: the contract the mirror copies is not
	// published yet; the message names it.
	WaitingForComputeConfigReason = "WaitingForComputeConfig"
	// NovaComputeConfigErrorReason: a mirror could not be written, for
	// example because a Secret of its name on a compute cluster is not the
	// ControlPlane's; the message names it. Other clusters are still served.
	NovaComputeConfigErrorReason = "NovaComputeConfigError"
	// NovaProjectionRejectedReason: the apiserver refused the projected
	// Nova; the message carries the admission error.
	NovaProjectionRejectedReason = "NovaProjectionRejected"
	// NovaErrorReason: any other failure while projecting the Nova.
	NovaErrorReason = "NovaError"
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
	// ComputeConfigMirrorLabel marks the copy of the compute contract on a
	// compute cluster. Only Secrets with the value "true" are ever reaped.
	ComputeConfigMirrorLabel = "nova.openstack.c5c3.io/compute-config-mirror"
	// MaxNameLengthWithNova bounds a ControlPlane's name while services.nova
	// is set: {cp}-nova must fit the Nova's 41 characters.
	MaxNameLengthWithNova = 36
)
