package novacompute

import (
	"context"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// DefaultWorkers is how many pool passes run at once unless the operator
// is told otherwise. Passes mostly wait on apiservers and OpenStack, so a
// few at once shorten the queue even on two cores; see "Passes run
// concurrently" in docs/design/novacompute.md for what keeps them safe.
const DefaultWorkers = 4

// keyedMutex serializes work per key, such as one Nova's aggregates,
// while work under other keys runs on. A waiter gives up when its pass's
// context ends, so a pass stalled under the lock costs others at most
// their own deadline.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	ch   chan struct{}
	refs int
}

// lock takes key's lock and returns its release, or the context's error.
func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{ch: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; k.release(key, l) }, nil
	case <-ctx.Done():
		k.release(key, l)
		return nil, ctx.Err()
	}
}

// release drops a reference and forgets a key nobody holds or waits for,
// so the map holds only keys in use.
func (k *keyedMutex) release(key string, l *keyedLock) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(k.locks, key)
	}
}

// claims remembers each pool's latest node decision in this process. A
// pass publishes its decision only with its closing status patch, and the
// other pools read that status from the cache, so two passes running at
// once would each decide without the other's claims. Every decision is
// taken under mu and recorded before mu is released, so each one sees
// every decision taken before it, written or not.
type claims struct {
	mu    sync.Mutex
	pools map[types.NamespacedName]claim
}

type claim struct {
	uid   types.UID
	nodes []novav1alpha1.NovaComputeNode
}

// record notes a pool's decision; the caller holds mu.
func (c *claims) record(pool *novav1alpha1.NovaCompute, nodes []novav1alpha1.NovaComputeNode) {
	if c.pools == nil {
		c.pools = map[types.NamespacedName]claim{}
	}
	c.pools[types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}] = claim{uid: pool.UID, nodes: append([]novav1alpha1.NovaComputeNode(nil), nodes...)}
}

// settle notes the node list a pass ends with, which its closing patch
// writes. Later steps drop entries (a released or drained node), and a
// claim still naming them would keep the pool's siblings off those nodes
// until the pool's next pass. A pool whose last finalizer went is
// forgotten.
func (c *claims) settle(pool *novav1alpha1.NovaCompute) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !pool.DeletionTimestamp.IsZero() && len(pool.Finalizers) == 0 {
		delete(c.pools, types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name})
		return
	}
	c.record(pool, pool.Status.Nodes)
}

// forget drops a pool that is gone.
func (c *claims) forget(pool types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pools, pool)
}

// overlay returns copies of pools whose node lists also hold what their
// latest decision claimed; the caller holds mu.
func (c *claims) overlay(pools []novav1alpha1.NovaCompute) []novav1alpha1.NovaCompute {
	out := make([]novav1alpha1.NovaCompute, len(pools))
	for i := range pools {
		out[i] = pools[i]
		cl, ok := c.pools[types.NamespacedName{Namespace: pools[i].Namespace, Name: pools[i].Name}]
		if ok && cl.uid == pools[i].UID {
			out[i].Status.Nodes = MergeClaims(pools[i].Status.Nodes, cl.nodes)
		}
	}
	return out
}

// MergeClaims combines a pool's written node entries with those its latest
// decision claimed, erring towards held: a node is held when either says
// so, so that no other pool takes it while the two disagree, and the
// claimed entry wins otherwise, being the newer. It is pure.
func MergeClaims(written, claimed []novav1alpha1.NovaComputeNode) []novav1alpha1.NovaComputeNode {
	byName := map[string]novav1alpha1.NovaComputeNode{}
	var order []string
	for _, e := range claimed {
		byName[e.Name] = e
		order = append(order, e.Name)
	}
	for _, e := range written {
		c, ok := byName[e.Name]
		switch {
		case !ok:
			order = append(order, e.Name)
			byName[e.Name] = e
		case c.Phase == novav1alpha1.NodeConflict && e.Phase != novav1alpha1.NodeConflict:
			byName[e.Name] = e
		}
	}
	sort.Strings(order)
	out := make([]novav1alpha1.NovaComputeNode, 0, len(order))
	for _, n := range order {
		out = append(out, byName[n])
	}
	return out
}

// claimedPools lists the pools of the pool's Nova with their latest
// claims, as they are now: the aggregates step reaps by them, and a
// sibling may have claimed a zone since this pass's Nodes step.
func (r *Reconciler) claimedPools(ctx context.Context, pool *novav1alpha1.NovaCompute) ([]novav1alpha1.NovaCompute, error) {
	r.claims.mu.Lock()
	defer r.claims.mu.Unlock()
	pools, err := r.novaPools(ctx, pool)
	if err != nil {
		return nil, err
	}
	return r.claims.overlay(pools), nil
}
