package targetcluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// A registration scoped to one namespace, with a token that may write
// everywhere: every write path refuses the other namespaces before the
// apiserver sees a request, and cluster-scoped writes are left to the token.
func TestIntegrationScopeHoldsOnEveryRemoteWrite(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	a := env.ComputeCluster("compute-a")
	raw, err := a.RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	const name, outside = "compute-a-wide-token", "default"
	s := targetcluster.BuildRegistrationSecret(name, env.ClustersNamespace, raw, testenv.WorkloadNamespace)
	if err := env.Management.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(ctx, s) })
	remote := waitResolves(t, name)

	// An object Anvil would own, outside the scope, written behind its back.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scope-owner", Namespace: outside}}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scope-child", Namespace: outside, Labels: map[string]string{
		childwriter.OwnerKindLabel: "ConfigMap", childwriter.OwnerNameLabel: "scope-owner", childwriter.OwnerNamespaceLabel: outside,
	}}, Data: map[string]string{"k": "v"}}
	if err := a.Client.Create(ctx, owned.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Client.Delete(ctx, owned) })
	if err := remote.Reader.Get(ctx, client.ObjectKeyFromObject(owned), owned); err != nil {
		t.Fatal(err)
	}

	apply := &unstructured.Unstructured{}
	apply.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	apply.SetNamespace(outside)
	apply.SetName("scope-applied")
	writes := map[string]error{
		"Create":              remote.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scope-created", Namespace: outside}}),
		"Update":              remote.Client.Update(ctx, owned.DeepCopy()),
		"Patch":               remote.Client.Patch(ctx, owned.DeepCopy(), client.MergeFrom(owned)),
		"Apply":               remote.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(childwriter.FieldOwner)),
		"Delete":              remote.Client.Delete(ctx, owned.DeepCopy()),
		"DeleteAllOf there":   remote.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(outside)),
		"DeleteAllOf all":     remote.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}),
		"Status().Patch":      remote.Client.Status().Patch(ctx, owned.DeepCopy(), client.MergeFrom(owned)),
		"Writer.Apply":        remote.Writer().Apply(ctx, owner, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scope-child", Namespace: outside}}),
		"Sweep":               remote.Writer().Sweep(ctx, owner, []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}),
		"SubResource().Apply": remote.Client.SubResource("status").Apply(ctx, client.ApplyConfigurationFromUnstructured(apply)),
	}
	for op, err := range writes {
		want := outside
		if op == "DeleteAllOf all" {
			want = "" // every namespace
		}
		var refused *childwriter.NamespaceNotAllowedError
		if !errors.As(err, &refused) || refused.Cluster != name || refused.Namespace != want {
			t.Errorf("%s outside the scope = %v, want a NamespaceNotAllowedError naming %q", op, err, want)
		}
	}
	if deleted, err := remote.Writer().Delete(ctx, owner, owned.DeepCopy()); deleted || err != nil {
		t.Errorf("Writer.Delete outside the scope = %v, %v; want nothing done", deleted, err)
	}
	live := &corev1.ConfigMap{}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(owned), live); err != nil || live.ResourceVersion != owned.ResourceVersion {
		t.Errorf("the object outside the scope was touched: %v (resourceVersion %s, was %s)", err, live.ResourceVersion, owned.ResourceVersion)
	}
	for _, n := range []string{"scope-created", "scope-applied"} {
		if err := a.Client.Get(ctx, client.ObjectKey{Namespace: outside, Name: n}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s reached the apiserver: %v", n, err)
		}
	}

	// Inside the scope, and for a cluster-scoped kind, the client writes.
	inside := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scope-inside", Namespace: testenv.WorkloadNamespace}}
	if err := remote.Client.Create(ctx, inside); err != nil {
		t.Errorf("a write inside the scope failed: %v", err)
	}
	if err := remote.Client.Delete(ctx, inside); err != nil {
		t.Errorf("a delete inside the scope failed: %v", err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "anvil-scope-test"}}
	if err := remote.Client.Create(ctx, role); err != nil {
		t.Errorf("a cluster-scoped write was refused: %v", err)
	}
	_ = a.Client.Delete(ctx, role)
}

// An operator that does not allow cluster-wide registrations refuses a
// registration without namespaces, with an event that names the reason,
// and engages the same cluster registered with namespaces.
func TestIntegrationClusterWideRegistrationRefused(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	const namespace, wide, scoped = "scope-clusters", "compute-a-everywhere", "compute-a-openstack"
	if err := env.Management.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	raw, err := env.ComputeCluster("compute-a").RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	for name, namespaces := range map[string]string{wide: "", scoped: testenv.WorkloadNamespace} {
		s := targetcluster.BuildRegistrationSecret(name, namespace, raw, namespaces)
		if err := env.Management.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Management.Client.Delete(ctx, s) })
	}
	reg := startRegistryIn(t, namespace, false).registry

	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := reg.Resolve(scoped)
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("the registration with namespaces was not engaged")
	}
	var refused string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		if err := env.Management.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == wide && e.Reason == targetcluster.ReasonRegistrationRefused {
				refused = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal("no RegistrationRefused event on the registration without namespaces")
	}
	if !strings.Contains(refused, string(targetcluster.RefusedClusterWide)) {
		t.Errorf("the event %q does not name %s", refused, targetcluster.RefusedClusterWide)
	}
	if _, err := reg.Resolve(wide); !targetcluster.IsUnavailable(err) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Resolve = %v, want an unavailable error that says the registration was refused", err)
	}
	// Registered reads the Secrets, not the engagements: the refused
	// registration is listed, so a ControlPlane's teardown waits for it.
	// A registration whose scope leaves a namespace out is not listed for it.
	if names, err := reg.Registered(ctx, testenv.WorkloadNamespace); err != nil || !slices.Equal(names, []string{wide, scoped}) {
		t.Errorf("Registered = %v, %v; want [%s %s]", names, err, wide, scoped)
	}
	if names, err := reg.Registered(ctx, "elsewhere"); err != nil || !slices.Equal(names, []string{wide}) {
		t.Errorf("Registered(elsewhere) = %v, %v; want [%s]", names, err, wide)
	}
}
