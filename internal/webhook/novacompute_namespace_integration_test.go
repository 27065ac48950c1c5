package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// A pool is admitted only in a namespace labelled for privileged pools;
// the refusal names metadata.namespace, the namespace and the label. Once
// a pool exists, losing the label blocks only the changes the policy
// decides on: its image, tolerations and node selector.
func TestIntegrationNovaComputeNamespaceOptIn(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-x"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, ns) })
	notOptedIn := []refusal{
		{true, "metadata.namespace", "namespace team-x does not allow privileged pools"},
		{true, "metadata.namespace", novav1alpha1.PrivilegedPoolsLabel + "=true"},
	}

	pool := newPool("pool-team-x")
	pool.Namespace = ns.Name
	assertRefused(t, c.Create(ctx, pool.DeepCopy()), notOptedIn)

	setLabel(t, c, ns, "true")
	if err := c.Create(ctx, pool); err != nil {
		t.Fatalf("a pool in an opted-in namespace was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, pool) })

	setLabel(t, c, ns, "")
	traits := pool.DeepCopy()
	traits.Spec.Traits = []string{"CUSTOM_TEAM_X"}
	if err := c.Update(ctx, traits); err != nil {
		t.Fatalf("a traits change after the label was removed was refused: %v", err)
	}
	selector := traits.DeepCopy()
	selector.Spec.NodeSelector["zone"] = "az1"
	assertRefused(t, c.Update(ctx, selector), notOptedIn)
	image := traits.DeepCopy()
	image.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.2"}
	assertRefused(t, c.Update(ctx, image), notOptedIn)
}

// setLabel sets the opt-in label of ns to value, or removes it for "".
func setLabel(t *testing.T, c client.Client, ns *corev1.Namespace, value string) {
	t.Helper()
	patch := client.MergeFrom(ns.DeepCopy())
	if value == "" {
		delete(ns.Labels, novav1alpha1.PrivilegedPoolsLabel)
	} else {
		ns.Labels = map[string]string{novav1alpha1.PrivilegedPoolsLabel: value}
	}
	if err := c.Patch(context.Background(), ns, patch); err != nil {
		t.Fatal(err)
	}
}
