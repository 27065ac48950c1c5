package controlplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// holdFinalizer keeps a pool in deletion for as long as a test needs.
const holdFinalizer = "test.anvil.c5c3.io/hold"

// A ControlPlane lists every copy it delivered in status.deliveries, with
// the hash of the data on the cluster. A pool that drains keeps its
// cluster's copies; once the cluster's last pool and agent are gone, the
// pass that sees it deletes every copy there before its status stops
// listing them, with an event per copy, and touches no other cluster. A
// listed copy that someone replaced with a Secret of their own is
// forgotten, not deleted.
func TestIntegrationDeliveriesInventory(t *testing.T) {
	startOperator(t)
	const name = "inv"
	mirror, copyName := name+"-nova-compute-config", name+"-nova-metadata-agent-secret"
	newControlPlane(t, name, true)
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	poolA := newPool(t, name, name+"-a", "compute-a")
	poolB := newPool(t, name, name+"-b", "compute-b")
	newAgent(t, name+"-agent", "compute-a", copyName)
	listed := waitInventory(t, name, func(got []string) bool {
		return slices.Equal(got, []string{"compute-a/" + mirror, "compute-a/" + copyName, "compute-b/" + mirror})
	})
	for _, d := range listed {
		s, err := remoteSecret(t, d.Cluster, d.Name)
		if err != nil || d.Kind != "Secret" || d.Hash != novaconfig.Hash(s.Data) {
			t.Errorf("%s/%s: listed hash %s does not match the Secret there (%v)", d.Cluster, d.Name, d.Hash, err)
		}
	}
	onB := mustRemote(t, "compute-b", mirror)

	// compute-a's pool drains: its copies stay while it does.
	holdAndDelete(t, poolA)
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	for _, n := range []string{mirror, copyName} {
		if _, err := remoteSecret(t, "compute-a", n); err != nil {
			t.Errorf("%s went from compute-a while its pool drains: %v", n, err)
		}
	}

	// The pool and the agent go: one pass deletes both copies there.
	release(t, poolA)
	deleteAgent(t, name+"-agent")
	waitInventory(t, name, func(got []string) bool { return slices.Equal(got, []string{"compute-b/" + mirror}) })
	for _, n := range []string{mirror, copyName} {
		if _, err := remoteSecret(t, "compute-a", n); !apierrors.IsNotFound(err) {
			t.Errorf("the inventory dropped %s on compute-a before it was deleted: %v", n, err)
		}
	}
	waitEvent(t, c5c3v1alpha1.ComputeConfigMirrorReapedEvent, name)
	waitEvent(t, c5c3v1alpha1.MetadataSharedSecretMirrorReapedEvent, name)
	if after := mustRemote(t, "compute-b", mirror); after.ResourceVersion != onB.ResourceVersion {
		t.Error("withdrawing compute-a's copies rewrote compute-b's mirror")
	}

	// Someone replaces compute-b's mirror with a Secret of their own; when
	// its pool goes, the inventory forgets the copy and leaves theirs.
	foreign := replaceWithForeign(t, "compute-b", mirror)
	holdAndDelete(t, poolB)
	release(t, poolB)
	waitInventory(t, name, func(got []string) bool { return len(got) == 0 })
	if kept := mustRemote(t, "compute-b", mirror); kept.ResourceVersion != foreign.ResourceVersion {
		t.Error("a foreign Secret under a listed copy's name was changed or deleted")
	}
	deleteControlPlane(t, &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}})
	assertNoLeak(t)
}

// waitInventory waits until the ControlPlane's inventory, as
// cluster/name, satisfies ok, and returns it.
func waitInventory(t *testing.T, name string, ok func([]string) bool) []c5c3v1alpha1.DeliveredCopy {
	t.Helper()
	var got []c5c3v1alpha1.DeliveredCopy
	var names []string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		got, names = cp.Status.Deliveries, nil
		for _, d := range got {
			names = append(names, d.Cluster+"/"+d.Name)
		}
		return ok(names), nil
	})
	if err != nil {
		t.Fatalf("%s: the inventory never read as expected (last %v)", name, names)
	}
	return got
}

// holdAndDelete deletes a pool that a test finalizer keeps in deletion,
// as a pool that drains its nodes stays.
func holdAndDelete(t *testing.T, pool *novav1alpha1.NovaCompute) {
	t.Helper()
	ctx := context.Background()
	updatePool(t, pool, func(p *novav1alpha1.NovaCompute) { p.Finalizers = append(p.Finalizers, holdFinalizer) })
	if err := env.Management.Client.Delete(ctx, pool); err != nil {
		t.Fatal(err)
	}
}

// release lets a held pool go: the test stands in for a drain that
// finished, so every finalizer goes, and waits until the pool is gone.
func release(t *testing.T, pool *novav1alpha1.NovaCompute) {
	t.Helper()
	updatePool(t, pool, func(p *novav1alpha1.NovaCompute) { p.Finalizers = nil })
	waitGone(t, func() error {
		return env.Management.Client.Get(context.Background(), client.ObjectKeyFromObject(pool), &novav1alpha1.NovaCompute{})
	})
}

// updatePool changes a pool, retrying on the conflicts its controller's
// writes cause.
func updatePool(t *testing.T, pool *novav1alpha1.NovaCompute, change func(*novav1alpha1.NovaCompute)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		live := &novav1alpha1.NovaCompute{}
		if err := env.Management.Client.Get(ctx, client.ObjectKeyFromObject(pool), live); err != nil {
			return false, err
		}
		change(live)
		err := env.Management.Client.Update(ctx, live)
		return err == nil, client.IgnoreNotFound(ignoreConflict(err))
	})
	if err != nil {
		t.Fatalf("changing pool %s: %v", pool.Name, err)
	}
}

// ignoreConflict turns a conflict into nil, to be retried.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// deleteAgent deletes a metadata agent and waits until it is gone.
func deleteAgent(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	a := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}}
	if err := env.Management.Client.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	waitGone(t, func() error { return env.Management.Client.Get(ctx, client.ObjectKeyFromObject(a), a) })
}

// replaceWithForeign deletes a delivered copy on a cluster and creates a
// Secret of the same name that the ControlPlane does not own.
func replaceWithForeign(t *testing.T, cluster, name string) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	c := env.ComputeCluster(cluster).Client
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}}); err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name,
		Labels: map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true"}},
		Data: map[string][]byte{"note": []byte("someone else's")}}
	// The ControlPlane may write its copy back first; the test waits for
	// a moment when the name is free.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, foreign)
		if apierrors.IsAlreadyExists(err) {
			return false, c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}})
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("planting a foreign %s on %s: %v", name, cluster, err)
	}
	return foreign
}
