package v1alpha1

// Condition types of a Nova.
const (
	// ComputeConfigReadyCondition reports the compute contract: True once
	// {nova}-compute-config (and, with remoteCompute, the remote contract)
	// is published from the current inputs.
	ComputeConfigReadyCondition = "ComputeConfigReady"
)

// Reasons of ComputeConfigReady.
const (
	// ComputeConfigPublishedReason: every contract is published from the
	// current inputs.
	ComputeConfigPublishedReason = "ComputeConfigPublished"
	// WaitingForRemoteTransportURLReason: remoteCompute names a Secret or
	// key that does not exist or is empty. The in-cluster contract is still
	// published and the last remote contract is kept.
	WaitingForRemoteTransportURLReason = "WaitingForRemoteTransportURL"
	// ComputeConfigErrorReason: an input cannot be rendered safely, for
	// example a transport URL that is not rabbit:// or a value with a
	// control character. The published Secrets are left unchanged.
	ComputeConfigErrorReason = "ComputeConfigError"
	// WaitingForInputsReason: an input Secret or key of the in-cluster
	// contract does not exist yet.
	WaitingForInputsReason = "WaitingForInputs"
)

// Names and labels of the compute contract Secrets.
const (
	// ComputeConfigSuffix names the in-cluster contract: {nova}-compute-config.
	ComputeConfigSuffix = "-compute-config"
	// RemoteComputeConfigSuffix names the remote contract:
	// {nova}-remote-compute-config.
	RemoteComputeConfigSuffix = "-remote-compute-config"
	// ComponentLabel marks Anvil's objects by role.
	ComponentLabel = "app.kubernetes.io/component"
	// ComputeConfigComponent is the ComponentLabel value of both contracts.
	ComputeConfigComponent = "compute-config"
)
