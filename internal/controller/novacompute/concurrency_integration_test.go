package novacompute_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// Labels of the overlap test's nodes on compute-b: set selects them all,
// half splits them for the two oldest pools.
const (
	raceSet  = "race.anvil.test/set"
	raceHalf = "race.anvil.test/half"
)

// Four pools of one Nova on one cluster with overlapping selectors, their
// passes running at once (the suite's operator runs the default workers):
// each node is held by exactly one pool, whichever wins by the rules, and
// the others report it as a Conflict. The nodes appear together, and later
// are relabelled together, so that every pool is queued by the same events
// and the passes overlap. compute-b runs no pods and gets no contract, so
// every pass stops after its node decision (ConfigReady waits), which is
// what this test looks at.
func TestIntegrationConcurrentPoolsResolveOwnership(t *testing.T) {
	e := startStack(t)
	m, other := e.Management, e.ComputeCluster("compute-b")
	if got := gaugeValue(t, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": "novacompute-controller"}); got < 2 {
		t.Fatalf("the pool controller runs %v worker(s); this test needs passes at once", got)
	}
	const nova = "race-nova"
	createHandNova(t, m, nova, cloud.Endpoints[localcloud.KeystoneURL], "nova", "race-PASSWORD-"+run)
	set := "s" + run
	// Created in this order, one after the other: ra is the oldest. ra and
	// rb select one half each, rc and rd every node.
	pools := []struct{ name, half string }{{"race-a", "even"}, {"race-b", "odd"}, {"race-c", ""}, {"race-d", ""}}
	for _, p := range pools {
		newPool(t, e, p.name, "", func(pool *novav1alpha1.NovaCompute) {
			pool.Spec.NovaRef.Name = nova
			pool.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-b"}
			pool.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.1"}
			pool.Spec.NodeSelector = map[string]string{raceSet: set}
			if p.half != "" {
				pool.Spec.NodeSelector[raceHalf] = p.half
			}
		})
		t.Cleanup(func() { forgetPool(m, p.name) })
	}
	var nodes []string
	for i := range 12 {
		nodes = append(nodes, fmt.Sprintf("race%s-%02d", run, i))
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = other.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})

	// No half yet: rc, older than rd, takes every node as it appears.
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{raceSet: set, raceHalf: "none"}}}
		if err := other.Client.Create(t.Context(), node); err != nil {
			t.Fatal(err)
		}
	}
	waitOwners(t, e, nodes, func(int) string { return "race-c" })

	// Now ra and rb, older than rc, select halves rc holds: a pool that
	// holds a node keeps it, so they report Conflicts and rc keeps all.
	for i, n := range nodes {
		relabel(t, other, n, map[string]string{raceHalf: []string{"even", "odd"}[i%2]})
	}
	waitOwners(t, e, nodes, func(int) string { return "race-c" })

	// rc lets go of every node at once: the oldest pool that selects a
	// node takes it, ra the even ones and rb the odd ones, rd none.
	// A pool on compute-b never gets past its contract to drain its nodes,
	// so the test takes rc away as a pool that drained them would go.
	forgetPool(m, "race-c")
	waitOwners(t, e, nodes, func(i int) string { return []string{"race-a", "race-b"}[i%2] })
}

// waitOwners waits until each node is held, not as a Conflict, by exactly
// the pool owner names, and every other live pool of the test that selects
// it reports it as a Conflict with that pool.
func waitOwners(t *testing.T, e *testenv.Environment, nodes []string, owner func(int) string) {
	t.Helper()
	eventually(t, 2*time.Minute, "every node held by one pool", func(ctx context.Context) (bool, string) {
		list := &novav1alpha1.NovaComputeList{}
		if err := e.Management.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var wrong []string
		for i, n := range nodes {
			var holders []string
			for _, p := range list.Items {
				if !strings.HasPrefix(p.Name, "race-") || !p.DeletionTimestamp.IsZero() {
					continue
				}
				en := nodeEntry(&p, n)
				switch {
				case en != nil && en.Phase != novav1alpha1.NodeConflict:
					holders = append(holders, p.Name)
				case en != nil && en.ConflictsWith != owner(i):
					wrong = append(wrong, fmt.Sprintf("%s: %s conflicts with %s", n, p.Name, en.ConflictsWith))
				}
			}
			if len(holders) != 1 || holders[0] != owner(i) {
				wrong = append(wrong, fmt.Sprintf("%s held by %v, want %s", n, holders, owner(i)))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

// relabel merges labels into a node's; an empty value removes the label.
func relabel(t *testing.T, c *testenv.Cluster, node string, labels map[string]string) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for k, v := range labels {
		if v == "" {
			delete(n.Labels, k)
		} else {
			n.Labels[k] = v
		}
	}
	if err := c.Client.Patch(t.Context(), n, patch); err != nil {
		t.Fatal(err)
	}
}

// forgetPool removes a pool of compute-b without its drain: its nodes have
// no service and nothing of it runs there, and it could not drain them,
// because the pass stops before the Services step without a contract.
func forgetPool(m *testenv.Cluster, name string) {
	ctx := context.Background()
	p := &novav1alpha1.NovaCompute{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		return
	}
	_ = m.Client.Delete(ctx, p)
	patch := client.MergeFrom(p.DeepCopy())
	p.Finalizers = nil
	_ = m.Client.Patch(ctx, p, patch)
}
