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
	// ServiceConfigReadyCondition reports {nova}-config, the nova.conf the
	// control plane's Deployments and database Jobs mount: True once it is
	// published from the current inputs.
	ServiceConfigReadyCondition = "ServiceConfigReady"
	// DatabaseReadyCondition reports the database Jobs of the current
	// release and image: True once every one has succeeded, in order.
	DatabaseReadyCondition = "DatabaseReady"
	// DeploymentsReadyCondition reports the control plane's Deployments:
	// True once each is available on its current template.
	DeploymentsReadyCondition = "DeploymentsReady"
	// MetadataHTTPRouteReadyCondition reports the HTTPRoute that publishes
	// the metadata API through spec.metadata.gateway.
	MetadataHTTPRouteReadyCondition = "MetadataHTTPRouteReady"
)

// Reasons of ServiceConfigReady.
const (
	// ServiceConfigPublishedReason: {nova}-config is published from the
	// current inputs.
	ServiceConfigPublishedReason = "ServiceConfigPublished"
	// ServiceConfigErrorReason: the inputs cannot be rendered safely, a
	// database is not declared, or a same-named Secret is not Anvil's.
	// The last {nova}-config is kept, so running pods are undisturbed.
	ServiceConfigErrorReason = "ServiceConfigError"
)

// Reasons of DatabaseReady.
const (
	// DatabaseSyncedReason: every database Job of the current release and
	// image has succeeded.
	DatabaseSyncedReason = "DatabaseSynced"
	// DatabaseJobRunningReason: a database Job has not finished yet; the
	// message names it. The Deployments keep their templates until it
	// succeeds.
	DatabaseJobRunningReason = "DatabaseJobRunning"
	// DatabaseJobFailedReason: a database Job failed; the message names
	// it. The rollout is held, every Deployment stays on its template,
	// until the Job is deleted (it is then run again) or the release or
	// image changes.
	DatabaseJobFailedReason = "DatabaseJobFailed"
)

// Reasons of DeploymentsReady.
const (
	// DeploymentsAvailableReason: every Deployment runs its current
	// template on all its replicas.
	DeploymentsAvailableReason = "DeploymentsAvailable"
	// DeploymentsProgressingReason: a Deployment is rolling out; the
	// message names it. The later ones in the order conductor, scheduler,
	// then api, metadata and console proxy wait for it.
	DeploymentsProgressingReason = "DeploymentsProgressing"
	// DeploymentErrorReason: a Deployment, Service or PodDisruptionBudget
	// of that name exists and is not Anvil's.
	DeploymentErrorReason = "DeploymentError"
)

// Reasons of MetadataHTTPRouteReady.
const (
	// HTTPRouteAcceptedReason: the Gateway accepted {nova}-metadata.
	HTTPRouteAcceptedReason = "HTTPRouteAccepted"
	// HTTPRouteNotRequiredReason: spec.metadata.gateway is not set, so no
	// route is written; one written earlier is deleted.
	HTTPRouteNotRequiredReason = "HTTPRouteNotRequired"
	// HTTPRouteNotAcceptedReason: the Gateway has not accepted the route
	// yet, or refused it; the message carries the Gateway's reason.
	HTTPRouteNotAcceptedReason = "HTTPRouteNotAccepted"
	// GatewayAPINotInstalledReason: the cluster serves no HTTPRoute kind.
	GatewayAPINotInstalledReason = "GatewayAPINotInstalled"
	// CapabilityProbeFailedReason: asking the cluster whether it serves
	// HTTPRoutes failed.
	CapabilityProbeFailedReason = "CapabilityProbeFailed"
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
	// KeystoneEndpointNotAllowedReason: a Keystone URL of the spec names a
	// host that is neither the owning ControlPlane's declared Keystone nor
	// on the operator's --allowed-keystone-hosts (which admission also
	// enforces). Nothing is published or written, so no password is sent
	// there; the message names the field and the host. It is terminal until
	// the spec, the ControlPlane or the operator's flag changes.
	KeystoneEndpointNotAllowedReason = "KeystoneEndpointNotAllowed"
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
	// ServiceConfigSuffix names the control plane's nova.conf Secret:
	// {nova}-config.
	ServiceConfigSuffix = "-config"
	// ServiceConfigComponent is the ComponentLabel value of {nova}-config.
	ServiceConfigComponent = "config"
)
