package targetcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PinAnnotationPrefix begins, followed by a cluster's name, the annotation
// of the clusters Namespace that keeps the cluster's endpoint pin across
// operator restarts: the EndpointFingerprint it was last engaged with. It
// holds no token, certificate or URL. The Namespace object is cluster
// scoped, so only cluster administrators and the operator (by the chart's
// rule for that one Namespace) can change it; whoever may only write
// Secrets or ConfigMaps in the namespace can neither remove a pin nor
// acknowledge a change.
const PinAnnotationPrefix = "pin.endpoint.anvil.c5c3.io/"

// PinAnnotation is the annotation that pins cluster.
func PinAnnotation(cluster string) string { return PinAnnotationPrefix + annotationName(cluster) }

// annotationName is cluster as the name part of an annotation key, which
// may hold 63 characters. A registration may be named with up to 253, so
// a longer name is replaced by "h-" and 40 hex digits of its SHA-256; the
// refusal of a change names the whole key, so nobody has to compute it.
// It is pure.
func annotationName(cluster string) string {
	if len(cluster) <= validation.LabelValueMaxLength {
		return cluster
	}
	sum := sha256.Sum256([]byte(cluster))
	return "h-" + hex.EncodeToString(sum[:])[:40]
}

// EndpointPinsConfigMap names the ConfigMap, in the clusters namespace,
// where earlier releases kept the pins. Any writer of that namespace could
// remove a key there and have the next change trusted, so pins now live
// on the Namespace; the ConfigMap is only read for a cluster the Namespace
// has no pin for yet, so that an upgrade does not trust every
// registration anew.
const EndpointPinsConfigMap = "anvil-endpoint-pins"

// pinFieldManager is the field manager of every write to the pins, so the
// Namespace's managedFields show which annotations the operator wrote.
const pinFieldManager = "anvil-endpoint-pins"

// The registry patches only the clusters Namespace, by name: that grant is
// written by hand in the chart, not by a marker, because a marker would
// grant patch on every Namespace. It reads the legacy pins ConfigMap.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get

// pinStore keeps endpoint pins, and reads acknowledgements, in the
// annotations of the clusters Namespace. It is the pins' only copy: every
// decision reads it, so a pin survives a restart or a leader change.
type pinStore struct {
	// reader reads from the apiserver, not from a cache: one named Get per
	// decision is cheap, and a cache would watch every Namespace.
	reader client.Reader
	writer client.Client
	// namespace is the clusters namespace.
	namespace string
}

// endpointRecord is what the clusters Namespace says of one cluster.
type endpointRecord struct {
	// pinned is the fingerprint the cluster was last engaged with, "" for
	// none.
	pinned string
	// accepted is the AcceptEndpointAnnotation value, "" when absent.
	accepted string
}

// get returns what the clusters Namespace records for name. A Namespace
// without a pin for it falls back to the legacy ConfigMap, and a pin found
// there is moved onto the Namespace; a missing ConfigMap, or one the
// operator may not read, means no pin.
func (s *pinStore) get(ctx context.Context, name string) (endpointRecord, error) {
	ns := &corev1.Namespace{}
	if err := s.reader.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); err != nil {
		return endpointRecord{}, fmt.Errorf("reading the endpoint pins (Namespace %s): %w", s.namespace, err)
	}
	rec := endpointRecord{pinned: ns.Annotations[PinAnnotation(name)], accepted: ns.Annotations[AcceptEndpointAnnotation(name)]}
	if rec.pinned != "" {
		return rec, nil
	}
	cm := &corev1.ConfigMap{}
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: EndpointPinsConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return rec, nil
	case err != nil:
		return endpointRecord{}, fmt.Errorf("reading the legacy endpoint pins (ConfigMap %s/%s): %w", s.namespace, EndpointPinsConfigMap, err)
	}
	if rec.pinned = cm.Data[name]; rec.pinned != "" {
		// Moved at once: left in the ConfigMap, the pin would still be one
		// that any writer of the namespace can remove.
		if err := s.set(ctx, name, rec.pinned); err != nil {
			return endpointRecord{}, err
		}
	}
	return rec, nil
}

// set pins name to fingerprint. It merge-patches that one annotation,
// which needs no resourceVersion and never touches another cluster's, so
// concurrent passes for different clusters, or a second replica during a
// leader change, cannot undo each other. The registry calls it only when
// the stored pin differs, so a settled system writes nothing.
func (s *pinStore) set(ctx context.Context, name, fingerprint string) error {
	patch, err := pinPatch(name, fingerprint)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}
	if err := s.writer.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(pinFieldManager)); err != nil {
		return fmt.Errorf("writing the endpoint pin to Namespace %s: %w", s.namespace, err)
	}
	return nil
}

// pinPatch is the JSON merge patch that sets one pin annotation and
// leaves every other annotation as it is. It is pure.
func pinPatch(name, fingerprint string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{PinAnnotation(name): fingerprint}}})
}

// storesPin tells whether a decision moves the pin to the registration's
// endpoint: a first engagement and an acknowledged change do; an unchanged
// endpoint already is the pin, and a refused one must not become it. It is
// pure.
func storesPin(d EndpointDecision) bool {
	return d == EndpointFirst || d == EndpointChangeAccepted
}
