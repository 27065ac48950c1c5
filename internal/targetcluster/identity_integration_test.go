package targetcluster_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

// Two management clusters register the same compute-cluster namespace and
// hold an owner of the same kind, namespace and name. What the other one
// wrote is neither overwritten, deleted nor swept; what this one writes
// carries its identity, the UID of its kube-system Namespace; a child
// written before the identity label existed is still adopted.
func TestIntegrationAnotherManagementClustersChildIsNotOurs(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	id, err := operator.ResolveManagementCluster(ctx, env.Management.Client, "")
	if err != nil || len(id) != 36 {
		t.Fatalf("the kube-system Namespace's UID as the identity: %q, %v", id, err)
	}
	childwriter.SetManagementCluster(id)
	t.Cleanup(func() { childwriter.SetManagementCluster("") })
	remote := waitResolves(t, "compute-a")
	a := env.ComputeCluster("compute-a")
	ns := testenv.WorkloadNamespace
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "id-owner", Namespace: ns}}
	ownerLabels := func(extra map[string]string) map[string]string {
		l := map[string]string{childwriter.OwnerKindLabel: "ConfigMap", childwriter.OwnerNameLabel: "id-owner", childwriter.OwnerNamespaceLabel: ns}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "id-theirs", Namespace: ns,
		Labels: ownerLabels(map[string]string{childwriter.ManagementClusterLabel: "staging-management"})}, Data: map[string]string{"k": "theirs"}}
	legacy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "id-legacy", Namespace: ns, Labels: ownerLabels(nil)}, Data: map[string]string{"k": "old"}}
	for _, cm := range []*corev1.ConfigMap{theirs, legacy} {
		if err := a.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Client.Delete(ctx, cm) })
	}
	children := remote.Writer()

	var notOwned *childwriter.NotOwnedError
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "id-theirs", Namespace: ns}, Data: map[string]string{"k": "ours"}}
	if err := children.Apply(ctx, owner, desired); !errors.As(err, &notOwned) {
		t.Errorf("applying over the other management cluster's child: %v, want a NotOwnedError", err)
	}
	if deleted, err := children.Delete(ctx, owner, theirs.DeepCopy()); deleted || err != nil {
		t.Errorf("deleting the other management cluster's child: %v, %v", deleted, err)
	}

	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "id-mine", Namespace: ns}, Data: map[string]string{"k": "ours"}}
	adopted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "id-legacy", Namespace: ns}, Data: map[string]string{"k": "ours"}}
	for _, cm := range []*corev1.ConfigMap{mine, adopted} {
		if err := children.Apply(ctx, owner, cm); err != nil {
			t.Fatalf("applying %s: %v", cm.Name, err)
		}
		live := &corev1.ConfigMap{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil || live.Labels[childwriter.ManagementClusterLabel] != id {
			t.Errorf("%s carries the identity %q (%v), want %q", cm.Name, live.Labels[childwriter.ManagementClusterLabel], err, id)
		}
	}

	if err := remote.Writer().Sweep(ctx, owner, []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range []*corev1.ConfigMap{mine, adopted} {
		if err := remote.Reader.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the sweep left this management cluster's %s: %v", cm.Name, err)
		}
	}
	live := &corev1.ConfigMap{}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(theirs), live); err != nil || live.Data["k"] != "theirs" {
		t.Errorf("the other management cluster's child was changed or swept: %v, %v", live.Data, err)
	}
}
