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
	// ReconcilingReason is set while a condition has no verdict yet, for
	// example on the first pass after creation.
	ReconcilingReason = "Reconciling"

	// TargetClusterUnavailableReason marks the first gate condition of an
	// object whose targetClusterRef names a compute cluster that Anvil cannot
	// reach or does not know.
	TargetClusterUnavailableReason = "TargetClusterUnavailable"
)
