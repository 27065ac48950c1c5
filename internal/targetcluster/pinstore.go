package targetcluster

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EndpointPinsConfigMap names the ConfigMap, in the clusters namespace,
// that keeps each registration's endpoint pin across operator restarts:
// one key per cluster name, whose value is the EndpointFingerprint the
// cluster was last engaged with. It holds no token, certificate or URL.
// Removing a key resets that cluster's pin: its next engagement is trusted
// as a first one.
const EndpointPinsConfigMap = "anvil-endpoint-pins"

// pinFieldManager is the field manager of every write to the pins, so the
// ConfigMap's managedFields show which keys the operator wrote.
const pinFieldManager = "anvil-endpoint-pins"

// The registry reads and writes only the pins ConfigMap. A create is made
// by server-side apply, which names the object, so the chart can limit all
// three verbs to that one name; see docs/reference/operator-chart.md.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;patch

// pinStore keeps endpoint pins in EndpointPinsConfigMap. It is the pins'
// only copy: every decision reads it, so a pin survives a restart or a
// leader change, and a key an administrator removes is gone at once.
type pinStore struct {
	// reader reads from the apiserver, not from a cache: one named Get per
	// decision is cheap, and a cache would watch every ConfigMap the
	// manager may see.
	reader client.Reader
	writer client.Client
	// namespace is the clusters namespace.
	namespace string
}

// get returns the fingerprint pinned for name, or "" when there is none,
// including when the ConfigMap does not exist yet (a first install).
func (s *pinStore) get(ctx context.Context, name string) (string, error) {
	cm := &corev1.ConfigMap{}
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: EndpointPinsConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the endpoint pins (ConfigMap %s/%s): %w", s.namespace, EndpointPinsConfigMap, err)
	}
	return cm.Data[name], nil
}

// set pins name to fingerprint. It merge-patches that one key, which
// needs no resourceVersion and never touches another cluster's key, so
// concurrent passes for different clusters, or a second replica during a
// leader change, cannot undo each other. The registry calls it only when
// the stored pin differs, so a settled system writes nothing.
func (s *pinStore) set(ctx context.Context, name, fingerprint string) error {
	patch, err := pinPatch(name, fingerprint)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: EndpointPinsConfigMap}}
	err = s.writer.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(pinFieldManager))
	if apierrors.IsNotFound(err) {
		if err := s.create(ctx); err != nil {
			return err
		}
		err = s.writer.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(pinFieldManager))
	}
	if err != nil {
		return fmt.Errorf("writing the endpoint pin to ConfigMap %s/%s: %w", s.namespace, EndpointPinsConfigMap, err)
	}
	return nil
}

// create makes the empty ConfigMap by server-side apply. An apply that
// finds the object already there (another writer was first) changes
// nothing: it names no data key, and the keys are owned by the merge
// patches, a separate entry of managedFields.
func (s *pinStore) create(ctx context.Context) error {
	ac := corev1ac.ConfigMap(EndpointPinsConfigMap, s.namespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "anvil-operator"})
	if err := s.writer.Apply(ctx, ac, client.FieldOwner(pinFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("creating ConfigMap %s/%s for the endpoint pins: %w", s.namespace, EndpointPinsConfigMap, err)
	}
	return nil
}

// pinPatch is the JSON merge patch that sets one key of the pins
// ConfigMap and leaves every other key as it is. It is pure.
func pinPatch(name, fingerprint string) ([]byte, error) {
	return json.Marshal(map[string]any{"data": map[string]string{name: fingerprint}})
}

// storesPin tells whether a decision moves the pin to the registration's
// endpoint: a first engagement and an acknowledged change do; an unchanged
// endpoint already is the pin, and a refused one must not become it. It is
// pure.
func storesPin(d EndpointDecision) bool {
	return d == EndpointFirst || d == EndpointChangeAccepted
}
