package nova

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/targetcluster"
)

// childCluster is where a Nova's children and inputs live: the management
// cluster, or the cluster its targetClusterRef names.
type childCluster struct {
	// client writes children.
	client client.Client
	// reader reads inputs and the live state of children. Locally it is
	// the cached client, whose Secret watch drives re-renders.
	reader client.Reader
	// remote is set for a placed Nova.
	remote *targetcluster.Remote
}

// resolveChildren returns the cluster that holds the Nova's children, or
// the registry's error when that cluster is unavailable.
func (r *Reconciler) resolveChildren(nova *novav1alpha1.Nova) (*childCluster, error) {
	name := nova.TargetClusterName()
	if name == "" {
		return &childCluster{client: r.Client, reader: r.Client}, nil
	}
	if r.Registry == nil {
		return nil, &targetcluster.UnavailableError{Cluster: name, Reason: "this operator runs without compute clusters"}
	}
	remote, err := r.Registry.Resolve(name)
	if err != nil {
		return nil, err
	}
	return &childCluster{client: remote.Client, reader: remote.Reader, remote: remote}, nil
}

// claim marks obj as owner's child the way its cluster needs: a controller
// reference locally, ownership labels remotely.
func (c *childCluster) claim(owner, obj, live client.Object, scheme *runtime.Scheme) error {
	if c.remote != nil {
		return targetcluster.ClaimRemote(owner, obj, live, scheme)
	}
	return targetcluster.ClaimLocal(owner, obj, live, scheme)
}

// applySecret makes the child Secret equal desired: its data is replaced as
// a whole, so a key that is no longer rendered disappears. A Secret of that
// name which owner does not control is never touched.
func (c *childCluster) applySecret(ctx context.Context, scheme *runtime.Scheme, owner client.Object, desired *corev1.Secret) error {
	live := &corev1.Secret{}
	err := c.reader.Get(ctx, client.ObjectKeyFromObject(desired), live)
	switch {
	case apierrors.IsNotFound(err):
		obj := desired.DeepCopy()
		if err := c.claim(owner, obj, nil, scheme); err != nil {
			return err
		}
		return c.client.Create(ctx, obj)
	case err != nil:
		return err
	case !targetcluster.Controls(owner, live, scheme):
		return &targetcluster.NotOwnedError{Kind: "Secret", Namespace: live.Namespace, Name: live.Name}
	}
	updated := live.DeepCopy()
	updated.Data = desired.Data
	updated.StringData = nil
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		updated.Labels[k] = v
	}
	if err := c.claim(owner, updated, live, scheme); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(live, updated) {
		return nil
	}
	if err := c.client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", updated.Namespace, updated.Name, err)
	}
	return nil
}

// deleteSecret deletes a child Secret if owner controls it. A foreign
// Secret of that name is left alone.
func (c *childCluster) deleteSecret(ctx context.Context, scheme *runtime.Scheme, owner client.Object, namespace, name string) error {
	live := &corev1.Secret{}
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !targetcluster.Controls(owner, live, scheme) {
		return nil
	}
	return client.IgnoreNotFound(c.client.Delete(ctx, live))
}
