package novacompute_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/openstack"
)

// testAdoption checks both sides of adoption against the real Nova.
//
// pool-a's nodes, whose nova-compute the pool runs, adopted their
// services: the entry records the id Nova lists. (testDrain later proves
// that an adopted service is still disabled and deleted.)
//
// A host name that already is a Nova service Anvil never ran, a
// brownfield hypervisor (here a nova-compute process the test starts
// itself), is selected by a pool on compute-b, where no pod ever runs.
// The pool mirrors the service into the entry but never adopts it, so
// when the node leaves and the pool is deleted, the service is still
// listed, with the same id, enabled, and the pool says why it left it.
// Before adoption, the leaving node's service was disabled and, with no
// server on it, deleted.
func testAdoption(t *testing.T, e *testenv.Environment, nova *openstack.Session) {
	p, err := getPool(t.Context(), e, "pool-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{nodeA1, nodeA2} {
		en := nodeEntry(p, n)
		if en == nil || en.ServiceID == "" || en.AdoptedServiceID != en.ServiceID {
			t.Errorf("pool-a's entry of %s does not record its own service as adopted: %+v", n, en)
		}
	}

	host := "brown" + run
	// Cleanups run last in, first out: the service goes once its
	// nova-compute has stopped, so nothing registers it again.
	t.Cleanup(func() { deleteServicesOf(t, nova, host) })
	cloud.StartCompute(t, host)
	// Mapped, as a brownfield host is; the pool has nothing to discover.
	cloud.DiscoverHosts(t)
	brown := serviceOf(t, nova, host)

	other := e.ComputeCluster("compute-b")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: host, Labels: map[string]string{poolKey: "brown"}}}
	if err := other.Client.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Client.Delete(context.Background(), node) })
	newPool(t, e, "pool-brown", "brown", func(p *novav1alpha1.NovaCompute) {
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-b"}
	})
	var seen novav1alpha1.NovaComputeNode
	eventually(t, 3*time.Minute, "pool-brown mirrors the brownfield service", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-brown")
		if err != nil {
			return false, err.Error()
		}
		en := nodeEntry(p, host)
		if en == nil {
			return false, "no entry"
		}
		seen = *en
		return en.ServiceID == brown.ID || en.AdoptedServiceID != "", fmt.Sprintf("%+v", *en)
	})
	if seen.AdoptedServiceID != "" {
		t.Fatalf("pool-brown adopted the brownfield service of %s: %+v", host, seen)
	}
	t.Logf("pool-brown holds %s %s with the brownfield service %s, not adopted", host, seen.Phase, seen.ServiceID)

	labelNode(t, other, host, "")
	eventually(t, time.Minute, "pool-brown lets "+host+" go", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-brown")
		if err != nil {
			return false, err.Error()
		}
		if en := nodeEntry(p, host); en != nil {
			return false, fmt.Sprintf("%+v", *en)
		}
		return true, ""
	})
	if !hasEventWithMessage(t, e, "pool-brown", novav1alpha1.ComputeServiceNotAdoptedEvent, brown.ID) {
		t.Errorf("no ComputeServiceNotAdopted event naming service %s", brown.ID)
	}
	assertUntouched(t, nova, host, brown)
	deletePool(t, e, "pool-brown")
	assertUntouched(t, nova, host, brown)
}

// serviceOf returns the one service Nova lists for host.
func serviceOf(t *testing.T, nova *openstack.Session, host string) openstack.ComputeService {
	t.Helper()
	svcs, err := nova.ListComputeServices(t.Context(), host)
	if err != nil || len(svcs) != 1 {
		t.Fatalf("the services of %s: %+v, %v; want one", host, svcs, err)
	}
	return svcs[0]
}

// assertUntouched checks that host's service is the one the test started,
// enabled, with no disabled reason.
func assertUntouched(t *testing.T, nova *openstack.Session, host string, want openstack.ComputeService) {
	t.Helper()
	got := serviceOf(t, nova, host)
	if got.ID != want.ID || got.Status != "enabled" || got.DisabledReason != "" {
		t.Errorf("the brownfield service of %s = %+v; want %s, enabled, untouched", host, got, want.ID)
	}
}

// deleteServicesOf deletes what the test left in Nova for host.
func deleteServicesOf(t *testing.T, nova *openstack.Session, host string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svcs, err := nova.ListComputeServices(ctx, host)
	if err != nil {
		t.Logf("listing the services of %s to delete them: %v", host, err)
		return
	}
	for _, s := range svcs {
		if err := nova.DeleteService(ctx, s.ID); err != nil {
			t.Logf("deleting service %s of %s: %v", s.ID, host, err)
		}
	}
}
