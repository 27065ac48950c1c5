package targetcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
)

// checkScope decides whether a write may go to namespace on a cluster whose
// registration lists scope (empty: cluster-wide). A cluster-scoped object
// is the token's business: the list names namespaces, and Anvil's only
// cluster-scoped writes (Hypervisor traits) are not in any. An empty
// namespace on a namespaced kind means "every namespace" to DeleteAllOf and
// is refused under a scope. It is pure.
func checkScope(cluster string, scope []string, namespaced bool, namespace string) error {
	if len(scope) == 0 || !namespaced || slices.Contains(scope, namespace) {
		return nil
	}
	return &childwriter.NamespaceNotAllowedError{Cluster: cluster, Namespace: namespace}
}

// scopedClient is the client Remote hands out for a scoped registration:
// every write, whoever makes it, is checked against the registration's
// namespaces before it leaves the process, so no code path that bypasses
// Children (a direct Patch, a DeleteAllOf, a status write) can reach a
// namespace the registrant did not list. Reads pass through; the cache is
// already restricted to the scope.
type scopedClient struct {
	client.Client
	cluster string
	scope   []string
}

// newScopedClient wraps c for a registration's scope; a cluster-wide
// registration gets c itself, which has nothing to check.
func newScopedClient(c client.Client, cluster string, scope []string) client.Client {
	if len(scope) == 0 {
		return c
	}
	return &scopedClient{Client: c, cluster: cluster, scope: scope}
}

// allowObject checks a typed or unstructured object.
func (c *scopedClient) allowObject(obj client.Object) error {
	namespaced, err := c.IsObjectNamespaced(obj)
	if err != nil {
		return fmt.Errorf("checking the scope of cluster %s: %w", c.cluster, err)
	}
	return checkScope(c.cluster, c.scope, namespaced, obj.GetNamespace())
}

// allowApply checks an apply configuration, typed or unstructured. One
// whose kind or namespace cannot be read is refused: under a scope, an
// unknown target is not let through.
func (c *scopedClient) allowApply(ac runtime.ApplyConfiguration) error {
	var gvk schema.GroupVersionKind
	var namespace string
	switch t := ac.(type) {
	case interface {
		GetNamespace() string
		GroupVersionKind() schema.GroupVersionKind
	}:
		gvk, namespace = t.GroupVersionKind(), t.GetNamespace()
	case interface {
		GetNamespace() *string
		GetKind() *string
		GetAPIVersion() *string
	}:
		gv, err := schema.ParseGroupVersion(ptr.Deref(t.GetAPIVersion(), ""))
		if err != nil {
			return fmt.Errorf("checking the scope of cluster %s: %w", c.cluster, err)
		}
		gvk, namespace = gv.WithKind(ptr.Deref(t.GetKind(), "")), ptr.Deref(t.GetNamespace(), "")
	default:
		return fmt.Errorf("checking the scope of cluster %s: cannot read the namespace of a %T", c.cluster, ac)
	}
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("checking the scope of cluster %s: %w", c.cluster, err)
	}
	return checkScope(c.cluster, c.scope, mapping.Scope.Name() == meta.RESTScopeNameNamespace, namespace)
}

// Create refuses an object outside the scope, else creates it.
func (c *scopedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.allowObject(obj); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

// Update refuses an object outside the scope, else updates it.
func (c *scopedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.allowObject(obj); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

// Patch refuses an object outside the scope, else patches it.
func (c *scopedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.allowObject(obj); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// Apply refuses a configuration outside the scope, else applies it.
func (c *scopedClient) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := c.allowApply(ac); err != nil {
		return err
	}
	return c.Client.Apply(ctx, ac, opts...)
}

// Delete refuses an object outside the scope, else deletes it.
func (c *scopedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.allowObject(obj); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// DeleteAllOf refuses a namespace outside the scope, and no namespace at
// all, which would mean every namespace; else it deletes.
func (c *scopedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	o := &client.DeleteAllOfOptions{}
	o.ApplyOptions(opts)
	namespaced, err := c.IsObjectNamespaced(obj)
	if err != nil {
		return fmt.Errorf("checking the scope of cluster %s: %w", c.cluster, err)
	}
	if err := checkScope(c.cluster, c.scope, namespaced, o.Namespace); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

// Status returns a status writer under the same scope.
func (c *scopedClient) Status() client.SubResourceWriter {
	return &scopedSubResource{SubResourceClient: statusClient{c.Client.Status()}, scope: c}
}

// SubResource returns a subresource client under the same scope.
func (c *scopedClient) SubResource(subResource string) client.SubResourceClient {
	return &scopedSubResource{SubResourceClient: c.Client.SubResource(subResource), scope: c}
}

// statusClient lets the status writer travel as a SubResourceClient; its
// Get is never called, since Status() returns only the writer.
type statusClient struct{ client.SubResourceWriter }

func (statusClient) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return errors.New("the status writer does not read")
}

// scopedSubResource checks subresource writes (status, scale, eviction)
// like the object writes.
type scopedSubResource struct {
	client.SubResourceClient
	scope *scopedClient
}

// Create refuses an object outside the scope, else creates the subresource.
func (s *scopedSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.scope.allowObject(obj); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

// Update refuses an object outside the scope, else updates the subresource.
func (s *scopedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.scope.allowObject(obj); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

// Patch refuses an object outside the scope, else patches the subresource.
func (s *scopedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.scope.allowObject(obj); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// Apply refuses a configuration outside the scope, else applies the
// subresource.
func (s *scopedSubResource) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := s.scope.allowApply(ac); err != nil {
		return err
	}
	return s.SubResourceClient.Apply(ctx, ac, opts...)
}
