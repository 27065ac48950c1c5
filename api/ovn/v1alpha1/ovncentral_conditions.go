package v1alpha1

// Condition types of an OVNCentral, in pipeline order. TLS, Northbound,
// Southbound and Endpoints run one after the other; Northd, Relay, Backup
// and VPA run after them, side by side. Ready is True only while every one
// of them is True. A target cluster Anvil cannot use is reported on the
// first, TLSReady, under anvilmeta.TargetClusterUnavailableReason.
const (
	// TLSReadyCondition reports the Certificates of both databases, the
	// relay and the client, and their Secrets.
	TLSReadyCondition = "TLSReady"
	// NorthboundReadyCondition reports the northbound StatefulSet and its
	// Services.
	NorthboundReadyCondition = "NorthboundReady"
	// SouthboundReadyCondition reports the southbound StatefulSet and its
	// Services.
	SouthboundReadyCondition = "SouthboundReady"
	// EndpointsReadyCondition reports the database addresses in status.
	EndpointsReadyCondition = "EndpointsReady"
	// NorthdReadyCondition reports the northd Deployment.
	NorthdReadyCondition = "NorthdReady"
	// RelayReadyCondition reports the southbound relay Deployment and
	// Service.
	RelayReadyCondition = "RelayReady"
	// BackupReadyCondition reports the backup claim and CronJob.
	BackupReadyCondition = "BackupReady"
	// VPAReadyCondition reports vertical autoscaling of the central's
	// workloads. This API version asks for none, so it is always True
	// under VPANotRequired; it is kept so that tooling that reads it, as
	// the guide's checks do, finds it.
	VPAReadyCondition = "VPAReady"
)

// Reasons of TLSReady.
const (
	// CertificatesIssuedReason: every Certificate is issued and its Secret
	// carries a certificate, a key and the CA.
	CertificatesIssuedReason = "CertificatesIssued"
	// CertificatePendingReason: a Certificate is not issued yet.
	CertificatePendingReason = "CertificatePending"
	// CertificateErrorReason: writing or reading a Certificate failed, or
	// cert-manager reports that issuing it failed.
	CertificateErrorReason = "CertificateError"
	// CertManagerUnavailableReason: the cluster of the children serves no
	// cert-manager Certificate kind; asked again every 15 seconds.
	CertManagerUnavailableReason = "CertManagerUnavailable"
	// CapabilityProbeFailedReason: asking the cluster's discovery whether it
	// serves a kind the step needs failed.
	CapabilityProbeFailedReason = "CapabilityProbeFailed"
)

// Reasons of NorthboundReady and SouthboundReady.
const (
	// StatefulSetReadyReason: every Raft member is ready on the current
	// template.
	StatefulSetReadyReason = "StatefulSetReady"
	// StatefulSetProgressingReason: not every member is ready yet; the
	// message counts them.
	StatefulSetProgressingReason = "StatefulSetProgressing"
	// StatefulSetErrorReason: writing or reading the StatefulSet or its
	// Services failed.
	StatefulSetErrorReason = "StatefulSetError"
)

// Reasons of EndpointsReady.
const (
	// EndpointsPublishedReason: every address field the spec asks for is
	// published.
	EndpointsPublishedReason = "EndpointsPublished"
	// EndpointsPendingReason: a member's Service has no cluster IP yet, or
	// an externally reachable database has no member on a node. Every
	// address field of both databases is cleared until all can be
	// published, so no client reads half a cluster.
	EndpointsPendingReason = "EndpointsPending"
)

// Reasons of NorthdReady and RelayReady.
const (
	// DeploymentReadyReason: the Deployment is available on its current
	// template.
	DeploymentReadyReason = "DeploymentReady"
	// DeploymentProgressingReason: the Deployment is rolling out.
	DeploymentProgressingReason = "DeploymentProgressing"
	// DeploymentErrorReason: writing or reading the Deployment failed.
	DeploymentErrorReason = "DeploymentError"
	// WaitingForEndpointsReason: the database addresses are not published
	// yet, so the step has nothing to connect to. NorthdReady, RelayReady
	// and BackupReady use it.
	WaitingForEndpointsReason = "WaitingForEndpoints"
)

// Reasons of RelayReady besides the Deployment's.
const (
	// RelayNotRequiredReason: spec.relay is not set; a relay Anvil ran
	// earlier is deleted.
	RelayNotRequiredReason = "RelayNotRequired"
	// ServicePendingReason: the relay Service has no cluster IP yet.
	ServicePendingReason = "ServicePending"
)

// Reasons of BackupReady.
const (
	// BackupScheduledReason: the CronJob is scheduled and its newest
	// finished Job did not fail.
	BackupScheduledReason = "BackupScheduled"
	// BackupSuspendedReason: spec.backup.suspend is set; the CronJob exists
	// and schedules nothing.
	BackupSuspendedReason = "BackupSuspended"
	// BackupJobFailedReason: the newest finished backup Job failed.
	BackupJobFailedReason = "BackupJobFailed"
	// BackupPVCInvalidReason: the backup claim cannot serve
	// spec.backup.storage, for example because a same-named claim is not
	// Anvil's or has another storage class.
	BackupPVCInvalidReason = "BackupPVCInvalid"
	// BackupErrorReason: writing or reading the claim or the CronJob
	// failed.
	BackupErrorReason = "BackupError"
)

// VPANotRequiredReason is VPAReady's only reason: no vertical autoscaling
// is asked for, so no VerticalPodAutoscaler is written.
const VPANotRequiredReason = "VPANotRequired"
