package childwriter

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sweepPageSize bounds one list call of a sweep.
const sweepPageSize = 500

// Sweep deletes, in owner's namespace, every object of the given kinds
// that owner controls. It lists metadata only, in pages, and decides
// ownership per object rather than by a label selector, so that an object
// with a stale controller reference is found as well. A kind the cluster
// does not serve is skipped. It does not wait for the deletions. An owner
// namespace the registration does not list is refused with a
// *NamespaceNotAllowedError before any call: Anvil may delete nothing
// there.
func (w *Writer) Sweep(ctx context.Context, owner client.Object, kinds []schema.GroupVersionKind) error {
	if !w.Allows(owner.GetNamespace()) {
		return &NamespaceNotAllowedError{Cluster: w.Cluster, Namespace: owner.GetNamespace()}
	}
	for _, gvk := range kinds {
		if err := w.sweepKind(ctx, owner, gvk); err != nil {
			return fmt.Errorf("sweeping %s: %w", gvk.Kind, err)
		}
	}
	return nil
}

func (w *Writer) sweepKind(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind) error {
	rescanned := false
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := w.Reader.List(ctx, list, client.InNamespace(owner.GetNamespace()), client.Limit(sweepPageSize), client.Continue(cont))
		switch {
		case meta.IsNoMatchError(err):
			return nil
		case apierrors.IsResourceExpired(err) && !rescanned:
			// The continue token outlived the server's compaction; start over
			// once. Objects already deleted are simply not listed again.
			rescanned, cont = true, ""
			continue
		case err != nil:
			return err
		}
		for i := range list.Items {
			item := &list.Items[i]
			item.SetGroupVersionKind(gvk)
			if !Controls(owner, item, w.Scheme) {
				continue
			}
			if _, err := w.Delete(ctx, owner, item); err != nil {
				return err
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}
