package targetcluster

import (
	"errors"
	"fmt"
	"net/url"
)

// UnavailableError is what Resolve returns when a named compute cluster
// cannot be used. Reconcilers report it as TargetClusterUnavailable on their
// first condition. The message names the cluster and a reason, never a
// credential.
type UnavailableError struct {
	// Cluster is the name from targetClusterRef.
	Cluster string
	// Reason is a sentence fragment saying why, such as "it is not registered".
	Reason string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("target cluster %q is unavailable: %s", e.Cluster, e.Reason)
}

// The reasons an owner's condition gives for a registered cluster that
// Anvil cannot use. They are fixed sentences on purpose: whoever writes a
// registration Secret chooses the address it names, and a dial error, a
// TLS failure or a status code read back from a condition would tell them
// what listens there, turning the operator into a scanner of its own
// network. The operator's log keeps the cause for its administrators.
const (
	// NotConnectedReason: engaging the cluster failed (its apiserver did
	// not answer, its certificate did not verify, discovery or the first
	// sync failed).
	NotConnectedReason = "it is not connected yet: its apiserver could not be used (the operator's log says why)"
	// UnreachableReason: an engaged cluster stopped passing the readiness
	// probe.
	UnreachableReason = "it is unreachable: its apiserver does not pass the readiness probe (the operator's log says why)"
)

// IsUnavailable tells whether err means the target cluster cannot be used.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// sanitize turns a transport error into a message that cannot carry a
// credential: a *url.Error is reduced to its operation and cause, dropping
// the URL, which is the only place a kubeconfig value could reappear.
func sanitize(err error) string {
	if err == nil {
		return ""
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return ue.Op + " timed out"
		}
		return ue.Op + ": " + sanitize(ue.Err)
	}
	return err.Error()
}
