package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/novaconfig"
)

// maxPools bounds the live pools of the churn, and maxPoolNodes the nodes
// of one pool, so that the real nova-compute processes fit the machine.
const (
	maxPools     = 4
	maxPoolNodes = 2
)

// fleet is what the churn has asked for: the live pools with their nodes,
// the pools it deleted, and the metadata secret the contract must carry.
// Every decision draws from one seeded source, so a seed replays the same
// sequence of actions and kill delays.
type fleet struct {
	e   *testenv.Environment
	cp  *controlPlane
	rng *rand.Rand

	pools   map[string]*pool
	deleted []string
	// nodes maps each hypervisor node to the pool whose label it carries,
	// "" when free; cooling are nodes let go since the last convergence,
	// free again once their pool has released them.
	nodes   map[string]string
	cooling []string
	// metadata is the current metadata shared secret; rotations counts
	// its changes.
	metadata  string
	rotations int
	created   int
}

// pool is a live pool of the churn.
type pool struct {
	name, cluster string
	nodes         []string
}

func newFleet(e *testenv.Environment, cp *controlPlane, metadata string, rng *rand.Rand) *fleet {
	f := &fleet{e: e, cp: cp, rng: rng, pools: map[string]*pool{}, nodes: map[string]string{}, metadata: metadata}
	for _, c := range poolClusters {
		for i := range nodesPerCluster {
			f.nodes[nodeName(c, i)] = ""
		}
	}
	return f
}

// act runs one random action that the fleet's state allows and describes
// it: create a pool, add a node to one, take one away, delete a pool, or
// rotate the metadata shared secret.
func (f *fleet) act(t *testing.T) string {
	t.Helper()
	type action struct {
		name string
		run  func(*testing.T) string
	}
	actions := []action{{"rotate", f.rotate}}
	if len(f.pools) < maxPools && len(f.freeNodes("")) > 0 {
		actions = append(actions, action{"create", f.createRandom})
	}
	if len(f.growable()) > 0 {
		actions = append(actions, action{"scale-up", f.scaleUp})
	}
	if len(f.shrinkable()) > 0 {
		actions = append(actions, action{"scale-down", f.scaleDown})
	}
	if len(f.pools) > 1 {
		actions = append(actions, action{"delete", f.deleteRandom})
	}
	a := actions[f.rng.IntN(len(actions))]
	return a.name + ": " + a.run(t)
}

// freeNodes lists the free nodes, of one cluster or ("") of all, in name
// order, so that a seed picks the same node every time.
func (f *fleet) freeNodes(cluster string) []string {
	var out []string
	for n, owner := range f.nodes {
		if owner == "" && !slices.Contains(f.cooling, n) && (cluster == "" || clusterOfNode(n) == cluster) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// clusterOfNode inverts nodeName.
func clusterOfNode(node string) string {
	i := strings.LastIndex(node, "-")
	return "compute-" + node[i+1:i+2]
}

// sortedPools returns the live pools in name order.
func (f *fleet) sortedPools() []*pool {
	out := make([]*pool, 0, len(f.pools))
	for _, p := range f.pools {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (f *fleet) growable() []*pool {
	var out []*pool
	for _, p := range f.sortedPools() {
		if len(p.nodes) < maxPoolNodes && len(f.freeNodes(p.cluster)) > 0 {
			out = append(out, p)
		}
	}
	return out
}

func (f *fleet) shrinkable() []*pool {
	var out []*pool
	for _, p := range f.sortedPools() {
		if len(p.nodes) > 1 {
			out = append(out, p)
		}
	}
	return out
}

// create makes a pool on a cluster with one free node of it.
func (f *fleet) create(t *testing.T, cluster string) string {
	t.Helper()
	f.created++
	p := &pool{name: fmt.Sprintf("cx%s-p%d", run, f.created), cluster: cluster}
	node := f.freeNodes(cluster)[0]
	f.label(t, node, p.name)
	p.nodes = []string{node}
	f.pools[p.name] = p
	newPool(t, f.e, f.cp, p.name, cluster)
	return fmt.Sprintf("pool %s on %s with %s", p.name, cluster, node)
}

func (f *fleet) createRandom(t *testing.T) string {
	free := f.freeNodes("")
	return f.create(t, clusterOfNode(free[f.rng.IntN(len(free))]))
}

func (f *fleet) scaleUp(t *testing.T) string {
	pools := f.growable()
	p := pools[f.rng.IntN(len(pools))]
	free := f.freeNodes(p.cluster)
	node := free[f.rng.IntN(len(free))]
	f.label(t, node, p.name)
	p.nodes = append(p.nodes, node)
	return fmt.Sprintf("%s joins pool %s", node, p.name)
}

func (f *fleet) scaleDown(t *testing.T) string {
	pools := f.shrinkable()
	p := pools[f.rng.IntN(len(pools))]
	node := p.nodes[f.rng.IntN(len(p.nodes))]
	p.nodes = slices.DeleteFunc(p.nodes, func(n string) bool { return n == node })
	f.label(t, node, "")
	f.cooling = append(f.cooling, node)
	return fmt.Sprintf("%s leaves pool %s", node, p.name)
}

// deleteRandom deletes a pool and takes its label off its nodes; they
// cool until the pool is gone.
func (f *fleet) deleteRandom(t *testing.T) string {
	pools := f.sortedPools()
	p := pools[f.rng.IntN(len(pools))]
	f.deletePool(t, p)
	return fmt.Sprintf("pool %s on %s", p.name, p.cluster)
}

func (f *fleet) deletePool(t *testing.T, p *pool) {
	t.Helper()
	deleteObject(t, f.e.Management.Client, &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns}})
	delete(f.pools, p.name)
	f.deleted = append(f.deleted, p.name)
	for _, n := range p.nodes {
		f.label(t, n, "")
		f.cooling = append(f.cooling, n)
	}
}

// rotate writes a new metadata shared secret, a credential of the
// contract: every mirror changes, and every pool rolls its nova-compute.
func (f *fleet) rotate(t *testing.T) string {
	t.Helper()
	f.rotations++
	f.metadata = fmt.Sprintf("cx-metadata-%s-%d-%016x", run, f.rotations, f.rng.Uint64())
	f.cp.secrets = append(f.cp.secrets, f.metadata)
	f.e.Management.PutSecret(t, ns, f.cp.name+"-metadata", map[string]string{"shared_secret": f.metadata})
	return fmt.Sprintf("metadata secret, rotation %d", f.rotations)
}

// label sets (or, with "", removes) the pool label of a node.
func (f *fleet) label(t *testing.T, node, value string) {
	t.Helper()
	c := f.e.ComputeCluster(clusterOfNode(node)).Client
	n := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if value == "" {
		delete(n.Labels, poolKey)
	} else {
		n.Labels[poolKey] = value
	}
	if err := c.Patch(t.Context(), n, patch); err != nil {
		t.Fatal(err)
	}
	f.nodes[node] = value
}

// converged tells whether the operator has caught up with the fleet: every
// live pool Ready for its generation, holding exactly its nodes as Active
// Nova hosts and running the contract its cluster's mirror carries, which
// holds the current metadata secret; every deleted pool gone; and no
// mirror on a cluster without pools. It reports the first gap.
func (f *fleet) converged(ctx context.Context) (bool, string) {
	m := f.e.Management.Client
	for _, name := range f.deleted {
		if ok, seen := gone(ctx, m, &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); !ok {
			return false, "deleted pool: " + seen
		}
	}
	for _, cluster := range poolClusters {
		mirror := &corev1.Secret{}
		err := f.e.ComputeCluster(cluster).Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: f.cp.mirrorName()}, mirror)
		pools := f.poolsOn(cluster)
		switch {
		case len(pools) == 0 && apierrors.IsNotFound(err):
			continue
		case len(pools) == 0:
			return false, fmt.Sprintf("the mirror on %s, which has no pool: %v", cluster, err)
		case err != nil:
			return false, fmt.Sprintf("the mirror on %s: %v", cluster, err)
		case string(mirror.Data[novaconfig.KeyMetadataSecret]) != f.metadata:
			return false, fmt.Sprintf("the mirror on %s does not carry metadata rotation %d", cluster, f.rotations)
		}
		for _, p := range pools {
			if ok, seen := f.poolConverged(ctx, p, novacompute.ContractHash(mirror.Data)); !ok {
				return false, seen
			}
		}
	}
	f.cooling = nil
	return true, ""
}

// poolsOn returns the live pools of a cluster.
func (f *fleet) poolsOn(cluster string) []*pool {
	var out []*pool
	for _, p := range f.sortedPools() {
		if p.cluster == cluster {
			out = append(out, p)
		}
	}
	return out
}

// poolConverged checks one live pool against what the fleet asked of it.
func (f *fleet) poolConverged(ctx context.Context, want *pool, hash string) (bool, string) {
	p := &novav1alpha1.NovaCompute{}
	if err := f.e.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: want.name}, p); err != nil {
		return false, err.Error()
	}
	c, seen := conditionOf(p.Status.Conditions, anvilmeta.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation {
		return false, "pool " + want.name + ": " + seen
	}
	var active []string
	for _, n := range p.Status.Nodes {
		if n.Phase != novav1alpha1.NodeActive {
			return false, fmt.Sprintf("pool %s: node %s is %s", want.name, n.Name, n.Phase)
		}
		active = append(active, n.Name)
	}
	sort.Strings(active)
	if wanted := slices.Sorted(slices.Values(want.nodes)); !slices.Equal(active, wanted) {
		return false, fmt.Sprintf("pool %s holds %v, want %v", want.name, active, wanted)
	}
	if p.Status.RolledOutContractHash != hash {
		return false, fmt.Sprintf("pool %s runs contract %.12s, its mirror carries %.12s", want.name, p.Status.RolledOutContractHash, hash)
	}
	return true, ""
}

// teardown deletes every live pool and waits until they are gone and
// their nodes are released.
func (f *fleet) teardown(t *testing.T) {
	t.Helper()
	for _, p := range f.sortedPools() {
		f.deletePool(t, p)
	}
	eventually(t, convergeTimeout, "every pool deleted", f.converged)
}
