package keystonepolicy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// ControlPlaneOf returns the ControlPlane that controls nova, or nil when
// none does. A Nova's author writes its ownerReferences, so a reference
// only counts when it names a ControlPlane of the Nova's namespace that
// exists with that UID; otherwise the Nova is treated as one of its own.
func ControlPlaneOf(ctx context.Context, r client.Reader, nova *novav1alpha1.Nova) (*c5c3v1alpha1.ControlPlane, error) {
	ref := metav1.GetControllerOf(nova)
	if ref == nil || ref.Kind != "ControlPlane" {
		return nil, nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != c5c3v1alpha1.GroupVersion.Group {
		return nil, nil //nolint:nilerr // a reference to another group names no ControlPlane
	}
	cp := &c5c3v1alpha1.ControlPlane{}
	err := r.Get(ctx, client.ObjectKey{Namespace: nova.Namespace, Name: ref.Name}, cp)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the owning ControlPlane %s: %w", ref.Name, err)
	case cp.UID != ref.UID:
		return nil, nil
	}
	return cp, nil
}
