package flow

import (
	"context"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// AddFinalizer adds name to obj's finalizers, unless obj carries it. Every
// controller patches finalizers this one way (patchFinalizers), and obj
// takes the new resourceVersion and finalizers and nothing else; the
// status patch at the end of the pass then locks on the version this pass
// wrote, and what the pass recorded in obj's status is kept.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object, name string) error {
	if controllerutil.ContainsFinalizer(obj, name) {
		return nil
	}
	return patchFinalizers(ctx, c, obj, append(slices.Clone(obj.GetFinalizers()), name))
}

// RemoveFinalizer is AddFinalizer's inverse. An object already gone is
// not an error: removing the last finalizer may have let it go.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, name string) error {
	if !controllerutil.ContainsFinalizer(obj, name) {
		return nil
	}
	want := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == name })
	return client.IgnoreNotFound(patchFinalizers(ctx, c, obj, want))
}

// patchFinalizers replaces obj's finalizers with want by a JSON patch that
// first tests the list is still the one obj read. A finalizer someone else
// added or removed meanwhile is therefore never overwritten: the patch
// fails and the pass is retried. Unlike a lock on the resourceVersion, a
// status write since the read (the pass's own, seen late by the cache)
// does not make it fail.
func patchFinalizers(ctx context.Context, c client.Client, obj client.Object, want []string) error {
	var have any
	if f := obj.GetFinalizers(); len(f) > 0 {
		have = f
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": have},
		{"op": "add", "path": "/metadata/finalizers", "value": want},
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patched, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil
	}
	if err := c.Patch(ctx, patched, client.RawPatch(types.JSONPatchType, data)); err != nil {
		return err
	}
	obj.SetResourceVersion(patched.GetResourceVersion())
	obj.SetFinalizers(patched.GetFinalizers())
	return nil
}
