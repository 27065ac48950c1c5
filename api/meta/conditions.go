package meta

// Condition types shared by every kind. They are stable API: tooling and the
// user guides wait on them with `kubectl wait --for=condition=...`.
const (
	// ReadyCondition summarises every other condition of an object. It is True
	// only when the object has converged on its spec.
	ReadyCondition = "Ready"
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
