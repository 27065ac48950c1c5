package novacompute

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestMergeClaims(t *testing.T) {
	e := func(name, phase, zone string) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: name, Phase: phase, Zone: zone}
	}
	const (
		pending  = novav1alpha1.NodePending
		active   = novav1alpha1.NodeActive
		conflict = novav1alpha1.NodeConflict
		draining = novav1alpha1.NodeDraining
	)
	tests := []struct {
		name             string
		written, claimed []novav1alpha1.NovaComputeNode
		want             []novav1alpha1.NovaComputeNode
	}{
		{name: "nothing claimed yet", written: []novav1alpha1.NovaComputeNode{e("n1", active, "z1")},
			want: []novav1alpha1.NovaComputeNode{e("n1", active, "z1")}},
		{name: "a claim not written yet", claimed: []novav1alpha1.NovaComputeNode{e("n2", pending, "z2")},
			want: []novav1alpha1.NovaComputeNode{e("n2", pending, "z2")}},
		{name: "the claim is newer", written: []novav1alpha1.NovaComputeNode{e("n1", active, "z1")},
			claimed: []novav1alpha1.NovaComputeNode{e("n1", draining, "z1")},
			want:    []novav1alpha1.NovaComputeNode{e("n1", draining, "z1")}},
		{name: "a written hold outlasts a claimed conflict", written: []novav1alpha1.NovaComputeNode{e("n1", active, "z1")},
			claimed: []novav1alpha1.NovaComputeNode{e("n1", conflict, "z1")},
			want:    []novav1alpha1.NovaComputeNode{e("n1", active, "z1")}},
		{name: "a node the claim dropped is still held as written", written: []novav1alpha1.NovaComputeNode{e("n1", draining, "z1")},
			claimed: []novav1alpha1.NovaComputeNode{e("n2", pending, "z2")},
			want:    []novav1alpha1.NovaComputeNode{e("n1", draining, "z1"), e("n2", pending, "z2")}},
		{name: "both conflicts: the claim's", written: []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: conflict, ConflictsWith: "a"}},
			claimed: []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: conflict, ConflictsWith: "b"}},
			want:    []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: conflict, ConflictsWith: "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MergeClaims(tt.written, tt.claimed); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("MergeClaims = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A pool's claim reaches its siblings only while it is the pool that
// made it: a pool deleted and created again under the same name starts
// from its written status.
func TestClaimsOverlay(t *testing.T) {
	pool := func(name string, uid types.UID) novav1alpha1.NovaCompute {
		return novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
	}
	a, b := pool("a", "uid-a"), pool("b", "uid-b")
	var c claims
	c.record(&a, []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: novav1alpha1.NodePending}})
	got := c.overlay([]novav1alpha1.NovaCompute{a, b})
	if len(got[0].Status.Nodes) != 1 || len(got[1].Status.Nodes) != 0 {
		t.Fatalf("overlay = %+v", got)
	}
	if len(a.Status.Nodes) != 0 {
		t.Error("overlay changed the listed pool")
	}
	if got := c.overlay([]novav1alpha1.NovaCompute{pool("a", "uid-a2")}); len(got[0].Status.Nodes) != 0 {
		t.Errorf("a new pool of the same name inherited a claim: %+v", got[0].Status.Nodes)
	}
	// The pass dropped n1 after its decision, a released node: the claim
	// follows, and only the written status keeps it held until it changes.
	c.settle(&a)
	if got := c.overlay([]novav1alpha1.NovaCompute{a}); len(got[0].Status.Nodes) != 0 {
		t.Errorf("a node the pass dropped is still claimed: %+v", got[0].Status.Nodes)
	}
	c.record(&a, []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: novav1alpha1.NodePending}})
	gone := a.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	c.settle(gone)
	if len(c.pools) != 0 {
		t.Errorf("a pool released of its last finalizer is still claimed: %+v", c.pools)
	}
	c.record(&a, []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: novav1alpha1.NodePending}})
	c.forget(types.NamespacedName{Namespace: "ns", Name: "a"})
	if got := c.overlay([]novav1alpha1.NovaCompute{a}); len(got[0].Status.Nodes) != 0 {
		t.Errorf("a forgotten claim still counts: %+v", got[0].Status.Nodes)
	}
}

// One key's holders never overlap, other keys run on, a waiter gives up
// with its context, and the map forgets keys nobody uses.
func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := k.lock(t.Context(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders of one key at once", most.Load())
	}

	unlockA, err := k.lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := k.lock(t.Context(), "b")
	if err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	unlockB()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := k.lock(ctx, "a"); err == nil {
		t.Fatal("took a held key")
	}
	unlockA()
	if len(k.locks) != 0 {
		t.Errorf("%d keys kept after every holder left", len(k.locks))
	}
}
