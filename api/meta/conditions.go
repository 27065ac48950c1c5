package meta

// Condition types shared by every kind. They are stable API: tooling and the
// user guides wait on them with `kubectl wait --for=condition=...`.
const (
	// ReadyCondition summarises every other condition of an object. It is True
	// only when the object has converged on its spec.
	ReadyCondition = "Ready"

	// ReconcilingCondition follows the kstatus convention that Flux, Argo CD
	// and `kubectl wait` tools read: it is True, with Ready's reason and
	// message, while the object has not converged on its current generation
	// and the controller still works or waits on it. It is absent otherwise.
	ReconcilingCondition = "Reconciling"

	// StalledCondition follows the same convention: it is True when a step
	// stopped on input that no retry can fix (a refused spec, a malformed
	// Secret, a namespace without the privileged opt-in), with that step's
	// reason and "<condition>: <message>". kstatus reads the object as
	// Failed, so a pipeline fails at once instead of waiting for its
	// timeout. It is absent otherwise.
	StalledCondition = "Stalled"
)

// Reasons shared by every kind.
const (
	// AllReadyReason is Ready's reason when every step condition is True
	// for the object's current generation. Otherwise Ready carries the
	// reason of the first step condition that is not True, and its message
	// names that condition.
	AllReadyReason = "AllReady"

	// ReconcilingReason is Ready's reason, with status Unknown, while a
	// step condition has not been reported for the object's current
	// generation, for example on the first pass after a spec change.
	ReconcilingReason = "Reconciling"

	// ReconcileErrorReason marks a step condition whose step failed in a
	// way it did not classify, such as an apiserver error. The pass is
	// retried with backoff.
	ReconcileErrorReason = "ReconcileError"

	// TargetClusterUnavailableReason marks the first gate condition of an
	// object whose targetClusterRef names a compute cluster that Anvil cannot
	// reach or does not know.
	TargetClusterUnavailableReason = "TargetClusterUnavailable"
)

// Reasons of the policy every privileged kind obeys (NovaCompute,
// OVNChassis, NeutronMetadataAgent), on the condition of the workload they
// withhold.
const (
	// RefusedByPolicyReason: the object's image, tolerations or node
	// selector break the operator's workload policy (which admission also
	// enforces), so nothing is written for it; the message names the
	// field. It is terminal until the spec or the policy changes.
	RefusedByPolicyReason = "RefusedByPolicy"

	// NamespaceNotOptedInReason: the object's namespace does not carry
	// PrivilegedNamespaceLabel with the value "true" (which admission also
	// enforces), so nothing is written for it; the message names the
	// namespace and the label. The controller checks again every resync,
	// so labelling the namespace takes effect without touching the object.
	NamespaceNotOptedInReason = "NamespaceNotOptedIn"
)

// PrivilegedNamespaceLabel opts a management namespace in to the kinds
// that run privileged hostNetwork DaemonSets on compute nodes, with the
// value "true". The right to create one in a namespace is the cluster
// administrator's to grant, not whoever may create the object there. The
// name keeps the word "pools" because NovaCompute pools came first.
const PrivilegedNamespaceLabel = "openstack.c5c3.io/privileged-pools"
