package childwriter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AppliedHashAnnotation holds, on every child Apply writes, a digest of the
// configuration Apply last sent. A child whose digest differs from the
// desired one is applied again, even when the live object holds every
// value desired sets (a key removed from an atomic map leaves exactly
// that), and a metadata-only cache can tell a changed child from a
// settled one without reading it (ChangeFromCache).
const AppliedHashAnnotation = "openstack.c5c3.io/applied-hash"

// annotateAppliedHash adds the digest of desired, taken without the
// annotation itself, to desired's annotations, and returns it.
func annotateAppliedHash(desired map[string]any) (string, error) {
	h, err := appliedHash(desired)
	if err != nil {
		return "", err
	}
	meta, _ := desired["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		desired["metadata"] = meta
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[AppliedHashAnnotation] = h
	return h, nil
}

// appliedHash is a SHA-256 digest of a configuration to apply, without the
// applied-hash annotation. JSON writes map keys in order, so equal
// configurations have equal digests. A digest of a Secret's data reveals
// nothing to whoever may read the annotation: they may read the data.
func appliedHash(desired map[string]any) (string, error) {
	doc := runtime.DeepCopyJSON(desired)
	if meta, ok := doc["metadata"].(map[string]any); ok {
		if a, ok := meta["annotations"].(map[string]any); ok {
			delete(a, AppliedHashAnnotation)
			if len(a) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// applyChangeFromCache is Apply's fast path for a change. It reads the
// child's metadata from the cache, and when the child is owner's and its
// applied hash differs from the desired one, it applies with the cached
// resourceVersion as a precondition: the apiserver refuses the write if
// the child changed since the cache saw it, for example if it was
// replaced by a foreign object. It reports done when it wrote. Anything
// else (no cached child, a foreign one, a settled one, a conflict) is left
// to the careful path, which reads the child from the apiserver.
func (w *Writer) applyChangeFromCache(ctx context.Context, owner, obj client.Object, gvk schema.GroupVersionKind) (bool, error) {
	cached := &metav1.PartialObjectMetadata{}
	cached.SetGroupVersionKind(gvk)
	if err := w.Client.Get(ctx, client.ObjectKeyFromObject(obj), cached); err != nil || !Controls(owner, cached, w.Scheme) {
		return false, nil //nolint:nilerr // the careful path reads the apiserver and reports what it finds
	}
	claimed, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := w.Claim(owner, claimed, cached); err != nil {
		return false, err
	}
	desired, want, err := desiredConfiguration(claimed, gvk)
	if err != nil {
		return false, err
	}
	if cached.GetAnnotations()[AppliedHashAnnotation] == want {
		// Probably settled: the careful path compares the whole object,
		// so an edit by someone else is still repaired.
		return false, nil
	}
	desired["metadata"].(map[string]any)["resourceVersion"] = cached.GetResourceVersion()
	u := &unstructured.Unstructured{Object: desired}
	err = w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
	switch {
	case apierrors.IsConflict(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return true, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}
