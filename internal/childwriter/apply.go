package childwriter

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldOwner is the field manager of every child Anvil applies.
const FieldOwner = "anvil"

// Apply makes obj, the desired state of one of owner's children, true on
// the children's cluster with server-side apply under FieldOwner. It:
//   - refuses, with a *NotOwnedError, a live object owner does not control;
//   - claims obj for owner the way the cluster needs (Claim);
//   - sends nothing when the live object already holds every field obj
//     sets, carries the digest of obj's configuration
//     (AppliedHashAnnotation), and FieldOwner owns no field obj no longer
//     sets, so a settled child costs one read and no write;
//   - otherwise applies, which also removes the fields it set before and
//     no longer sets, and leaves fields other managers own alone; on a
//     compute cluster only over the object it read (applyRead).
//
// With CreateOnly, an existing object owner controls is left as it is: for
// children whose content is generated once (a random secret) or immutable
// once running (a Job).
//
// On return obj holds the object as the cluster has it.
func (w *Writer) Apply(ctx context.Context, owner, obj client.Object, opts ...ApplyOption) error {
	var o applyOptions
	for _, opt := range opts {
		opt(&o)
	}
	// The registration's scope is what its owner agreed to; nothing is
	// written outside it, whatever the token would allow.
	if !w.Allows(obj.GetNamespace()) {
		return &NamespaceNotAllowedError{Cluster: w.Cluster, Namespace: obj.GetNamespace()}
	}
	gvk, err := apiutil.GVKForObject(obj, w.Scheme)
	if err != nil {
		return err
	}
	if o.changeFromCache && !o.createOnly {
		if done, err := w.applyChangeFromCache(ctx, owner, obj, gvk); done || err != nil {
			return err
		}
	}
	// A conflict means the child changed between the read and the write;
	// reading again decides afresh whether it is still owner's.
	for attempt := 1; ; attempt++ {
		err := w.applyRead(ctx, owner, obj, gvk, o)
		if !apierrors.IsConflict(err) || attempt == applyAttempts {
			return err
		}
	}
}

// applyAttempts bounds how often Apply reads and writes again after a
// conflict before it reports one.
const applyAttempts = 3

// absentVersion is the resourceVersion precondition of an apply that must
// create its child. An apply creates an absent object whatever version it
// names, and refuses an existing object whose version differs. etcd gives
// its first write revision 2, so no stored object carries version 1, and
// an object someone created after Apply read "absent" is refused rather
// than taken over.
const absentVersion = "1"

// applyRead is Apply's careful path: it reads the child and writes what
// the read decides. On a compute cluster, where the read goes past any
// cache, the write names the read's resourceVersion (or absentVersion) as
// a precondition, so that a child replaced or created between the read
// and the write is never taken over. Locally the read comes from the
// cache, which may lag the writer's own last write, so a precondition
// would fail for no one else's change; there the apiserver already
// refuses a second controller reference on an object someone else
// controls.
func (w *Writer) applyRead(ctx context.Context, owner, obj client.Object, gvk schema.GroupVersionKind, o applyOptions) error {
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	err := w.Reader.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return err
	case !Controls(owner, live, w.Scheme):
		return &NotOwnedError{Kind: gvk.Kind, Namespace: live.GetNamespace(), Name: live.GetName()}
	}
	if live != nil && o.createOnly {
		return copyObject(live, obj)
	}
	if err := w.Claim(owner, obj, live); err != nil {
		return err
	}
	if o.createOnly {
		// Create, not apply: a generated value must never replace one a
		// stale read did not see.
		return client.IgnoreAlreadyExists(w.Client.Create(ctx, obj))
	}
	desired, _, err := desiredConfiguration(obj, gvk)
	if err != nil {
		return err
	}
	version := absentVersion
	if live != nil {
		settled, err := settledObject(desired, live)
		if err != nil {
			return err
		}
		if settled {
			return copyObject(live, obj)
		}
		version = live.GetResourceVersion()
	}
	if w.Remote() {
		desired["metadata"].(map[string]any)["resourceVersion"] = version
	}
	u := &unstructured.Unstructured{Object: desired}
	if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// ApplyOption changes how Apply writes.
type ApplyOption func(*applyOptions)

type applyOptions struct{ createOnly, changeFromCache bool }

// CreateOnly makes Apply create an absent child and leave an existing one.
func CreateOnly(o *applyOptions) { o.createOnly = true }

// ChangeFromCache lets Apply send a change to a child without reading it
// first, when the children's Client caches the child's kind (metadata
// only is enough) and the cached child is owner's and was applied with
// other content; see applyChangeFromCache. Use it only for kinds the
// cluster's cache already watches: a read of any other kind would start
// an informer.
func ChangeFromCache(o *applyOptions) { o.changeFromCache = true }

// copyObject overwrites dst with src, two objects of one type.
func copyObject(src, dst client.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(src)
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, dst)
}

// Delete deletes the child named like obj when owner controls it; a
// foreign object of that name, or none, is left alone. It reports whether
// it deleted.
func (w *Writer) Delete(ctx context.Context, owner, obj client.Object) (bool, error) {
	return w.DeleteIf(ctx, obj, func(live client.Object) bool { return Controls(owner, live, w.Scheme) })
}

// DeleteIf deletes the object named like obj when owned accepts its live
// state, read past any cache; the deletion is conditional on that object's
// UID, so an object recreated meanwhile survives. Every deletion of a child
// goes through here.
//
// A namespace a scoped registration does not list is reported as nothing
// deleted, with no call, rather than as an error: reapers call this on
// every pass and while their owner is deleted, and an error would hold the
// owner forever, while Anvil may delete nothing there. A direct delete
// through a compute cluster's client is refused with a *NamespaceNotAllowedError.
func (w *Writer) DeleteIf(ctx context.Context, obj client.Object, owned func(live client.Object) bool) (bool, error) {
	if !w.Allows(obj.GetNamespace()) {
		return false, nil
	}
	if err := w.Reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !owned(obj) {
		return false, nil
	}
	uid := obj.GetUID()
	err := w.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	return err == nil, err
}

// desiredConfiguration is what Apply sends for obj: its apply
// configuration with its type set and the applied-hash annotation, whose
// value it also returns. The annotation is what makes a removal inside an
// atomic field visible to Settled: the apiserver records a map such as a
// pod's nodeSelector as one owned leaf, and a live map that still holds a
// key desired dropped contains every key desired sets, so without the
// digest the child would read settled and keep the key.
func desiredConfiguration(obj client.Object, gvk schema.GroupVersionKind) (map[string]any, string, error) {
	desired, err := applyConfiguration(obj)
	if err != nil {
		return nil, "", err
	}
	desired["apiVersion"], desired["kind"] = gvk.GroupVersion().String(), gvk.Kind
	h, err := annotateAppliedHash(desired)
	return desired, h, err
}

// applyConfiguration turns a typed desired object into the configuration
// to apply: no status, no server-set metadata, and no null fields, which
// in an apply would mean "remove".
func applyConfiguration(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink"} {
			delete(meta, k)
		}
	}
	return pruneNulls(m).(map[string]any), nil
}

// pruneNulls drops null values from maps, recursively.
func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			t[k] = pruneNulls(x)
		}
	case []any:
		for i := range t {
			t[i] = pruneNulls(t[i])
		}
	}
	return v
}
