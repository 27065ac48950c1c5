package v1alpha1

// Condition types of a Nova.
const (
	// ComputeConfigReadyCondition reports the compute contract: True once
	// {nova}-compute-config (and, with remoteCompute, the remote contract)
	// is published from the current inputs.
	ComputeConfigReadyCondition = "ComputeConfigReady"
	// ManageConfigReadyCondition reports {nova}-manage-config, the
	// database configuration nova-manage reads: True once it is published
	// from the current databases and their Secrets, or when no database is
	// declared and so none is needed.
	ManageConfigReadyCondition = "ManageConfigReady"
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

// Reasons of ManageConfigReady.
const (
	// ManageConfigPublishedReason: {nova}-manage-config is published from
	// the current databases and their Secrets.
	ManageConfigPublishedReason = "ManageConfigPublished"
	// ManageConfigNotRequiredReason: neither apiDatabase nor database is
	// declared, so there is nothing for nova-manage to reach and no
	// {nova}-manage-config; one Anvil published earlier is deleted.
	ManageConfigNotRequiredReason = "ManageConfigNotRequired"
	// WaitingForDatabaseSecretReason: a database's Secret, or its username
	// or password key, does not exist or is empty. The message names the
	// spec field, the Secret and the key. The last {nova}-manage-config is
	// kept.
	WaitingForDatabaseSecretReason = "WaitingForDatabaseSecret"
	// ManageConfigErrorReason: the databases cannot be rendered safely, for
	// example only one of them is declared or a credential holds a control
	// character, or a same-named Secret is not Anvil's. The last
	// {nova}-manage-config is kept.
	ManageConfigErrorReason = "ManageConfigError"
)

// Names and labels of the Secrets a Nova publishes.
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
	// ManageConfigComponent is the ComponentLabel value of
	// {nova}-manage-config.
	ManageConfigComponent = "manage-config"
)
