package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// rotationStage is one ComputeRotationComplete a watch saw, with the
// per-cluster report beside it.
type rotationStage struct {
	reason, message string
	clusters        []c5c3v1alpha1.ComputeClusterStatus
}

// A rotated service password reaches two compute clusters, each with a
// RollingUpdate pool whose pods kwok runs: ComputeRotationComplete reads
// "0 of 2" while the pools roll, and True once both have, and the status
// shows each cluster's hash at each stage.
func TestIntegrationAcknowledgedRotation(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	const name = "rot"
	clusters := []string{"compute-c", "compute-d"}
	for _, c := range clusters {
		node := testenv.Node{Name: name + "-" + c + "-node", Labels: map[string]string{
			"openstack.c5c3.io/nova-compute-pool": name + "-" + c, corev1.LabelTopologyZone: "az-" + c}}
		if err := e.ComputeCluster(c).StartWorkloads(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	newControlPlane(t, name, false)
	for _, c := range clusters {
		newPool(t, name, name+"-"+c, c)
	}
	before := waitRotation(t, name, c5c3v1alpha1.RotationCompleteReason)
	if !strings.HasPrefix(before.message, "2 of 2 clusters on ") || len(before.clusters) != 2 {
		t.Fatalf("before the rotation: %+v", before)
	}
	oldHash := before.clusters[0].ContractHash

	w, err := watchControlPlane(t, name)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	putSecret(t, name+"-nova-password", map[string]string{"password": rotatedPass})

	var seen []rotationStage
	deadline := time.After(2 * time.Minute)
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			cp, ok := ev.Object.(*c5c3v1alpha1.ControlPlane)
			if !ok {
				continue
			}
			if st := stageOf(cp); st != nil && st.clusters != nil && st.clusters[0].ContractHash != oldHash {
				seen = append(seen, *st)
				done = st.reason == c5c3v1alpha1.RotationCompleteReason
			}
		case <-deadline:
			t.Fatalf("the rotation never completed; stages seen: %+v", seen)
		}
	}
	first, last := seen[0], seen[len(seen)-1]
	if first.reason != c5c3v1alpha1.RotationInProgressReason || !strings.HasPrefix(first.message, "0 of 2 clusters on ") {
		t.Errorf("the first stage after the rotation = %+v, want RotationInProgress with 0 of 2", first)
	}
	newHash := last.clusters[0].ContractHash
	for _, c := range first.clusters {
		if c.ContractHash != newHash || len(c.Pools) != 1 || c.Pools[0].RolledOutContractHash != oldHash {
			t.Errorf("while rolling, %s = %+v, want mirror %s and its pool still on %s", c.Name, c, newHash, oldHash)
		}
	}
	for _, c := range last.clusters {
		if c.ContractHash != newHash || len(c.Pools) != 1 || c.Pools[0].RolledOutContractHash != newHash {
			t.Errorf("after the rollout, %s = %+v, want its pool on %s", c.Name, c, newHash)
		}
	}
	if !strings.HasPrefix(last.message, "2 of 2 clusters on "+newHash[:12]) {
		t.Errorf("the final message = %q", last.message)
	}
	assertNoLeak(t)
}

// stageOf reads a ControlPlane's ComputeRotationComplete, or nil.
func stageOf(cp *c5c3v1alpha1.ControlPlane) *rotationStage {
	c := apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.ComputeRotationCompleteCondition)
	if c == nil {
		return nil
	}
	return &rotationStage{reason: c.Reason, message: c.Message, clusters: cp.Status.ComputeClusters}
}

// waitRotation waits until ComputeRotationComplete has the reason.
func waitRotation(t *testing.T, name, reason string) rotationStage {
	t.Helper()
	var last *rotationStage
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err == nil {
			if last = stageOf(cp); last != nil && last.reason == reason {
				return *last
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ComputeRotationComplete never read %s (last %+v)", reason, last)
	return rotationStage{}
}

// watchControlPlane watches one ControlPlane, so that no stage of a
// rotation is missed between two polls.
func watchControlPlane(t *testing.T, name string) (watch.Interface, error) {
	t.Helper()
	c, err := client.NewWithWatch(env.Management.Config, client.Options{Scheme: env.Management.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	return c.Watch(context.Background(), &c5c3v1alpha1.ControlPlaneList{},
		client.InNamespace(testNamespace), client.MatchingFields{"metadata.name": name})
}
