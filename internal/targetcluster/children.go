package targetcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Children is where an owner's children live: the management cluster, or
// the compute cluster its targetClusterRef names. It writes them with the
// ownership mechanics that cluster needs, and never touches an object the
// owner does not control.
type Children struct {
	// Client writes children.
	Client client.Client
	// Reader reads the live state of children and inputs. Locally it is
	// the cached client, whose watches drive the next pass.
	Reader client.Reader
	// Remote is set for a compute cluster.
	Remote *Remote
}

// LocalChildren places children on the management cluster.
func LocalChildren(c client.Client) *Children { return &Children{Client: c, Reader: c} }

// ChildrenOn places children on a compute cluster.
func ChildrenOn(remote *Remote) *Children {
	return &Children{Client: remote.Client, Reader: remote.Reader, Remote: remote}
}

// Claim marks obj as owner's child the way its cluster needs: a controller
// reference locally, ownership labels remotely.
func (c *Children) Claim(owner, obj, live client.Object, scheme *runtime.Scheme) error {
	if c.Remote != nil {
		return ClaimRemote(owner, obj, live, scheme)
	}
	return ClaimLocal(owner, obj, live, scheme)
}

// ApplySecret makes the child Secret equal desired: its data is replaced as
// a whole, so a key that is no longer rendered disappears. A Secret of that
// name which owner does not control is never touched.
func (c *Children) ApplySecret(ctx context.Context, scheme *runtime.Scheme, owner client.Object, desired *corev1.Secret) error {
	live := &corev1.Secret{}
	err := c.Reader.Get(ctx, client.ObjectKeyFromObject(desired), live)
	switch {
	case apierrors.IsNotFound(err):
		obj := desired.DeepCopy()
		if err := c.Claim(owner, obj, nil, scheme); err != nil {
			return err
		}
		return c.Client.Create(ctx, obj)
	case err != nil:
		return err
	case !Controls(owner, live, scheme):
		return &NotOwnedError{Kind: "Secret", Namespace: live.Namespace, Name: live.Name}
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
	if err := c.Claim(owner, updated, live, scheme); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(live, updated) {
		return nil
	}
	if err := c.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", updated.Namespace, updated.Name, err)
	}
	return nil
}

// DeleteSecret deletes a child Secret if owner controls it. A foreign
// Secret of that name is left alone.
func (c *Children) DeleteSecret(ctx context.Context, scheme *runtime.Scheme, owner client.Object, namespace, name string) error {
	live := &corev1.Secret{}
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !Controls(owner, live, scheme) {
		return nil
	}
	return client.IgnoreNotFound(c.Client.Delete(ctx, live))
}
