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
	// for the object's current generation.
	AllReadyReason = "AllReady"

	// NotAllReadyReason is Ready's reason when a step condition is not
	// True, or was not reported for the current generation. Ready's message
	// names that condition, its status and its reason.
	NotAllReadyReason = "NotAllReady"

	// ReconcileErrorReason marks a step condition whose step failed in a
	// way it did not classify, such as an apiserver error. The pass is
	// retried with backoff.
	ReconcileErrorReason = "ReconcileError"

	// TargetClusterUnavailableReason marks the first gate condition of an
	// object whose targetClusterRef names a compute cluster that Anvil cannot
	// reach or does not know.
	TargetClusterUnavailableReason = "TargetClusterUnavailable"
)
