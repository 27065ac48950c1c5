package novacompute

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/anvil/anvil/internal/targetcluster"
)

// applyChild creates or updates a child of owner on cl: mutate sets the
// desired fields on the live object. An object of that name owner does not
// control is never touched.
func (r *Reconciler) applyChild(ctx context.Context, cl *targetcluster.Children, owner, obj client.Object, mutate func() error) error {
	if cl.Remote != nil {
		_, err := targetcluster.CreateOrUpdateRemote(ctx, cl.Remote, r.Scheme, owner, obj, mutate)
		return err
	}
	live := obj.DeepCopyObject().(client.Object)
	err := cl.Reader.Get(ctx, client.ObjectKeyFromObject(obj), live)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err == nil && !targetcluster.Controls(owner, live, r.Scheme) {
		gvk, _ := apiutil.GVKForObject(live, r.Scheme)
		return &targetcluster.NotOwnedError{Kind: gvk.Kind, Namespace: live.GetNamespace(), Name: live.GetName()}
	}
	_, err = controllerutil.CreateOrUpdate(ctx, cl.Client, obj, func() error {
		if err := mutate(); err != nil {
			return err
		}
		return controllerutil.SetControllerReference(owner, obj, r.Scheme)
	})
	return err
}

// deleteChild deletes a child of owner on cl, if owner controls it.
func (r *Reconciler) deleteChild(ctx context.Context, cl *targetcluster.Children, owner, obj client.Object) error {
	if err := cl.Reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !targetcluster.Controls(owner, obj, r.Scheme) {
		return nil
	}
	return client.IgnoreNotFound(cl.Client.Delete(ctx, obj, client.PropagationPolicy("Background")))
}
