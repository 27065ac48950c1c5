package targetcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// AcceptEndpointAnnotationPrefix begins, followed by a cluster's name, the
// annotation of the clusters Namespace that acknowledges a change of the
// cluster's server or certificate authority. Its value must be the
// EndpointFingerprint of the new server and CA, so an acknowledgement left
// in place approves that one endpoint and never a later change. It lives
// on the Namespace, not on the registration Secret: the Namespace is
// cluster scoped, so an acknowledgement takes a cluster administrator,
// not merely someone who may edit the Secret it vouches for.
const AcceptEndpointAnnotationPrefix = "accept.endpoint.anvil.c5c3.io/"

// AcceptEndpointAnnotation is the annotation that acknowledges a change of
// cluster's endpoint.
func AcceptEndpointAnnotation(cluster string) string {
	return AcceptEndpointAnnotationPrefix + annotationName(cluster)
}

// DefaultAcknowledgementPoll is how often a refused registration reads
// the Namespace again: an acknowledgement changes the Namespace, not the
// Secret the registry watches, and a cache of Namespaces would watch them
// all.
const DefaultAcknowledgementPoll = 15 * time.Second

// RefusedEndpointChanged means the server or CA of an engaged registration
// changed without an AcceptEndpointAnnotation that matches the new one, so
// the credentials Anvil writes could be redirected to another apiserver.
const RefusedEndpointChanged RefusalReason = "EndpointChanged"

// Event reasons for a change of an engaged cluster's endpoint.
const (
	// ReasonEndpointChangeRefused is a Warning: the server or CA changed
	// without a matching acknowledgement, and the cluster is disengaged.
	ReasonEndpointChangeRefused = "EndpointChangeRefused"
	// ReasonEndpointChanged is a Warning: an acknowledged change of the
	// server or CA took effect, and Anvil now writes to the new endpoint.
	ReasonEndpointChanged = "EndpointChanged"
)

// fingerprintLength is how many hex digits of the SHA-256 a fingerprint
// keeps: 64 bits are short enough to type and far too many to match by
// chance or by search.
const fingerprintLength = 16

// EndpointFingerprint identifies where a kubeconfig's current context sends
// Anvil's writes: the first 16 hex digits of the SHA-256 of the server URL,
// a newline and the CA bytes (PEM, as certificate-authority-data decodes).
// Registrants compute the same value with sha256sum; see
// docs/reference/target-clusters.md. It is pure.
func EndpointFingerprint(server string, caData []byte) string {
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{'\n'})
	h.Write(caData)
	return hex.EncodeToString(h.Sum(nil))[:fingerprintLength]
}

// EndpointDecision is what the registry does with a registration's
// endpoint, given the one it is pinned to.
type EndpointDecision string

// The outcomes of DecideEndpoint.
const (
	// EndpointFirst: nothing is pinned under the name yet; the endpoint is
	// trusted and pinned on engagement.
	EndpointFirst EndpointDecision = "First"
	// EndpointUnchanged: same server and CA, such as a token rotation.
	EndpointUnchanged EndpointDecision = "Unchanged"
	// EndpointChangeAccepted: the endpoint changed and the acknowledgement
	// names the new one.
	EndpointChangeAccepted EndpointDecision = "ChangeAccepted"
	// EndpointChangeRefused: the endpoint changed without a matching
	// acknowledgement.
	EndpointChangeRefused EndpointDecision = "ChangeRefused"
)

// DecideEndpoint compares next, a registration's endpoint fingerprint, with
// pinned, the one its cluster was last engaged with ("" for none), and
// acknowledged, the AcceptEndpointAnnotation value ("" when absent). Case
// and surrounding spaces of the acknowledgement do not count, so a value
// pasted from sha256sum or typed in upper case still matches. It is pure.
func DecideEndpoint(pinned, next, acknowledged string) EndpointDecision {
	switch {
	case pinned == "":
		return EndpointFirst
	case pinned == next:
		return EndpointUnchanged
	case next != "" && strings.EqualFold(strings.TrimSpace(acknowledged), next):
		return EndpointChangeAccepted
	default:
		return EndpointChangeRefused
	}
}

// endpointChangeRefusal is the refusal reported for EndpointChangeRefused.
// It names the annotation and never the server, the CA or either
// fingerprint: whoever acknowledges must compute it from a server and CA
// they have checked, which is the check the annotation exists for.
func endpointChangeRefusal(namespace, cluster string) error {
	return refuse(RefusedEndpointChanged,
		"the server or certificate authority differs from the one Anvil is engaged with; "+
			"to accept the change, a cluster administrator sets annotation %s on Namespace %s to the fingerprint of the new server and CA",
		AcceptEndpointAnnotation(cluster), namespace)
}

// endpointGate decides whether reg may engage under name, given what the
// clusters Namespace records of it, and, when it may not, reports the
// refusal: a metric, a log line, a Warning Event on the Secret and the
// reason Resolve gives. It returns the decision.
func (r *Registry) endpointGate(log logr.Logger, secret *corev1.Secret, name string, reg *Registration, rec endpointRecord) EndpointDecision {
	d := DecideEndpoint(rec.pinned, reg.Endpoint, rec.accepted)
	r.mu.Lock()
	reported := r.refused[name] == reg.Hash
	if d == EndpointChangeRefused {
		r.refused[name] = reg.Hash
	} else {
		delete(r.refused, name)
	}
	r.mu.Unlock()
	if d != EndpointChangeRefused || reported {
		// A refusal already reported stays as it was while the registry
		// polls for an acknowledgement: no second event or log line.
		return d
	}
	err := endpointChangeRefusal(secret.Namespace, name)
	refusalsTotal.WithLabelValues(string(RefusedEndpointChanged)).Inc()
	log.Info("refusing a changed server or certificate authority", "reason", string(RefusedEndpointChanged))
	r.recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonEndpointChangeRefused, "Register",
		"Anvil does not use this registration: %s", err.Error())
	// Disengaging, not staying on the old client: the Secret no longer
	// describes that engagement (its token may be revoked), and every object
	// naming the cluster should say why it stopped.
	r.disengage(name, "its registration Secret was refused ("+err.Error()+")")
	return d
}

// engageRegistration decides on the registration's endpoint against its
// stored pin and, unless the change is refused, engages the cluster, pins
// the endpoint and only then makes the cluster resolvable.
func (r *Registry) engageRegistration(ctx context.Context, log logr.Logger, secret *corev1.Secret, name string, reg *Registration) (ctrl.Result, error) {
	rec, err := r.pins.get(ctx, name)
	if err != nil {
		// Without the pin there is no decision: engaging could trust an
		// endpoint that was changed while the operator was down.
		r.setPending(name, "its endpoint pin cannot be read ("+err.Error()+")")
		return ctrl.Result{}, err
	}
	decision := r.endpointGate(log, secret, name, reg, rec)
	if decision == EndpointChangeRefused {
		// The old endpoint back in the Secret triggers a new pass; an
		// acknowledgement on the Namespace is found by polling.
		return ctrl.Result{RequeueAfter: r.opts.AcknowledgementPoll}, nil
	}

	log.Info("building the cluster from its registration Secret", "namespaces", strings.Join(reg.Namespaces, ","))
	e, err := r.engage(name, reg)
	if err != nil {
		engagementFailuresTotal.Inc()
		// The cause goes to the log with the returned error, not to the
		// owners' conditions; see NotConnectedReason.
		r.setPending(name, NotConnectedReason)
		return ctrl.Result{}, fmt.Errorf("engaging cluster %s: %w", name, err)
	}
	if storesPin(decision) {
		// Stored before any reconciler can resolve the cluster: an endpoint
		// that receives the contract is one a restart will hold it to.
		if err := r.pins.set(ctx, name, reg.Endpoint); err != nil {
			e.cancel()
			engagementFailuresTotal.Inc()
			r.setPending(name, "its endpoint cannot be pinned ("+err.Error()+")")
			return ctrl.Result{}, fmt.Errorf("pinning the endpoint of cluster %s: %w", name, err)
		}
		log.Info("pinned the cluster's server and certificate authority", "annotation", PinAnnotation(name))
	}
	r.swap(e)
	engagementsTotal.Inc()
	log.Info("engaged the cluster")
	r.recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonClusterEngaged, "Register", "Anvil reaches cluster %s through this registration", name)
	if decision == EndpointChangeAccepted {
		endpointChangesTotal.Inc()
		log.Info("the cluster's server or certificate authority changed, as acknowledged by the annotation", "annotation", AcceptEndpointAnnotation(name))
		r.recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonEndpointChanged, "Register",
			"Anvil now writes to cluster %s at a new server or certificate authority, as acknowledged by annotation %s on Namespace %s",
			name, AcceptEndpointAnnotation(name), secret.Namespace)
	}
	r.notify(name)
	return ctrl.Result{}, nil
}
