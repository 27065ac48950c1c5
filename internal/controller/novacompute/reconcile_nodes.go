package novacompute

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// NovaRefIndex is the field index from a pool to the name of its Nova.
const NovaRefIndex = "spec.novaRef.name"

// reconcileNodes decides which nodes the pool holds and in which phase. It
// lists the Nodes its selector matches, straight from the apiserver, and
// the other pools of the same Nova, which may hold or claim the same nodes.
func (r *Reconciler) reconcileNodes(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	p.nodes = map[string]*corev1.Node{}
	selected, err := p.listSelectedNodes(ctx)
	if err != nil {
		return flow.Continue, err
	}
	known, err := p.readHeldNodes(ctx)
	if err != nil {
		return flow.Continue, err
	}
	elsewhere, err := r.decideNodes(ctx, p, selected, known)
	if err != nil {
		return flow.Continue, err
	}
	pool.Status.Nodes = p.decision.Nodes
	r.newConflictEvents(p, elsewhere)
	setNodesCondition(p)
	// NoMatchingNodes and NodeConflict are not waits: the later steps
	// still serve the nodes the pool holds.
	return flow.Continue, nil
}

// decideNodes takes the pass's node decision under the claims lock and
// records it before the lock is released, so that a pass running at the
// same time decides with it. The pools are listed under the lock too: a
// pool that claimed before this pass decides is then in the list. It
// returns the cluster of each rival on another cluster.
func (r *Reconciler) decideNodes(ctx context.Context, p *pass, selected []NodeView, known map[string]map[string]string) (map[string]string, error) {
	pool := p.pool
	r.claims.mu.Lock()
	defer r.claims.mu.Unlock()
	pools, err := r.novaPools(ctx, pool)
	if err != nil {
		return nil, flow.Fail(novav1alpha1.NodesReadyCondition, novav1alpha1.NovaComputeListErrorReason,
			fmt.Errorf("listing the other pools of Nova %s: %w", pool.Spec.NovaRef.Name, err))
	}
	p.novaPools = r.claims.overlay(pools)
	rivals, elsewhere := r.rivalsOf(p, p.novaPools)
	p.decision = DecideNodes(NodeInput{
		Pool: pool.Name, Created: pool.CreationTimestamp.Time, Deleting: p.deleting,
		Selected: selected, Known: known, Current: pool.Status.Nodes, Rivals: rivals,
	})
	r.claims.record(pool, p.decision.Nodes)
	return elsewhere, nil
}

// novaPools lists the pools of the pool's Nova from the cache.
func (r *Reconciler) novaPools(ctx context.Context, pool *novav1alpha1.NovaCompute) ([]novav1alpha1.NovaCompute, error) {
	pools := &novav1alpha1.NovaComputeList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(pool.Namespace), client.MatchingFields{NovaRefIndex: pool.Spec.NovaRef.Name}); err != nil {
		return nil, err
	}
	return pools.Items, nil
}

// listSelectedNodes lists the Nodes the pool's selector matches into
// p.nodes; a pool being deleted selects none.
func (p *pass) listSelectedNodes(ctx context.Context) ([]NodeView, error) {
	if p.deleting {
		return nil, nil
	}
	list := &corev1.NodeList{}
	err := p.reader().List(ctx, list, client.MatchingLabels(p.pool.Spec.NodeSelector))
	switch {
	case apierrors.IsForbidden(err):
		return nil, flow.Wait(novav1alpha1.NodesReadyCondition, novav1alpha1.NodesForbiddenReason, inputRequeue,
			"the pool may not list the nodes of its cluster; grant list on nodes to its registration")
	case err != nil:
		return nil, flow.Fail(novav1alpha1.NodesReadyCondition, novav1alpha1.NodeListErrorReason, fmt.Errorf("listing the nodes: %w", err))
	}
	var selected []NodeView
	for i := range list.Items {
		n := &list.Items[i]
		p.nodes[n.Name] = n
		selected = append(selected, NodeView{Name: n.Name, Labels: n.Labels})
	}
	return selected, nil
}

// readHeldNodes reads each held node the list missed into p.nodes and
// returns their labels: such a node has left the selector or is gone, and
// reading it singly lets one that still exists keep its labels.
func (p *pass) readHeldNodes(ctx context.Context) (map[string]map[string]string, error) {
	known := map[string]map[string]string{}
	for _, e := range p.pool.Status.Nodes {
		if _, ok := p.nodes[e.Name]; ok || e.Phase == novav1alpha1.NodeConflict {
			continue
		}
		n := &corev1.Node{}
		err := p.reader().Get(ctx, client.ObjectKey{Name: e.Name}, n)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, flow.Fail(novav1alpha1.NodesReadyCondition, novav1alpha1.NodeListErrorReason, fmt.Errorf("reading held node %s: %w", e.Name, err))
		}
		p.nodes[n.Name] = n
		known[n.Name] = n.Labels
	}
	return known, nil
}

// newConflictEvents reports each node that entered Conflict in this pass,
// naming the pool that holds it and where, so that a lasting conflict is
// not reported again.
func (r *Reconciler) newConflictEvents(p *pass, elsewhere map[string]string) {
	for _, name := range p.decision.NewConflicts {
		e := p.entry(name)
		where := "this cluster"
		if c, ok := elsewhere[e.ConflictsWith]; ok {
			where = "cluster " + clusterLabel(c) + ", where the name is already a Nova host"
		}
		r.event(p.pool, nodeRef(name), true, novav1alpha1.NodeConflictEvent, "Select",
			"Node %s is held by NovaCompute %s of the same Nova on %s; this pool runs no pod there", name, e.ConflictsWith, where)
	}
}

// setNodesCondition reports the decision: a pool being deleted counts what
// leaves, and conflicts outrank an empty selection.
func setNodesCondition(p *pass) {
	pool := p.pool
	var conflicts []string
	for _, n := range p.decision.Nodes {
		if n.Phase == novav1alpha1.NodeConflict {
			conflicts = append(conflicts, fmt.Sprintf("%s (held by %s)", n.Name, n.ConflictsWith))
		}
	}
	sort.Strings(conflicts)
	switch {
	case p.deleting:
		conditionsOf(pool).Set(novav1alpha1.NodesReadyCondition, metav1.ConditionTrue, novav1alpha1.NodesResolvedReason,
			fmt.Sprintf("the pool is being deleted; %d node(s) leaving", p.decision.Leaving))
	case len(conflicts) > 0:
		conditionsOf(pool).Set(novav1alpha1.NodesReadyCondition, metav1.ConditionFalse, novav1alpha1.NodeConflictReason,
			"held by another pool of the same Nova: "+strings.Join(conflicts, ", "))
	case p.decision.Selected == 0:
		conditionsOf(pool).Set(novav1alpha1.NodesReadyCondition, metav1.ConditionFalse, novav1alpha1.NoMatchingNodesReason,
			fmt.Sprintf("no node matches the nodeSelector; %d node(s) leaving", p.decision.Leaving))
	default:
		conditionsOf(pool).Set(novav1alpha1.NodesReadyCondition, metav1.ConditionTrue, novav1alpha1.NodesResolvedReason,
			fmt.Sprintf("%d node(s) selected, %d leaving", p.decision.Selected, p.decision.Leaving))
	}
}

// rivalsOf turns the Nova's other pools into rivals for the pool's nodes.
// A pool on the same cluster competes for the same Nodes. A pool on
// another cluster competes only for the names it holds: a node name is the
// Nova host name, which is one service in the whole cloud, so a same-named
// node here must never take over, disable or delete the other cluster's
// service. It returns the cluster of each rival from elsewhere.
func (r *Reconciler) rivalsOf(p *pass, pools []novav1alpha1.NovaCompute) ([]Rival, map[string]string) {
	pool := p.pool
	var rivals []Rival
	elsewhere := map[string]string{}
	for i := range pools {
		o := &pools[i]
		if o.UID == pool.UID {
			continue
		}
		held := map[string]string{}
		for _, e := range o.Status.Nodes {
			if e.Phase != novav1alpha1.NodeConflict {
				held[e.Name] = e.Phase
			}
		}
		rival := Rival{Name: o.Name, Created: o.CreationTimestamp.Time, Deleting: !o.DeletionTimestamp.IsZero(), Held: held}
		if o.TargetClusterName() == pool.TargetClusterName() {
			p.rivals = append(p.rivals, *o)
			rival.Selector = o.Spec.NodeSelector
		} else {
			// No selector: its labels describe other Nodes.
			elsewhere[o.Name] = o.TargetClusterName()
		}
		rivals = append(rivals, rival)
	}
	return rivals, elsewhere
}

// clusterLabel names a cluster in a message; "" is the management cluster.
func clusterLabel(c string) string {
	if c == "" {
		return "the management cluster"
	}
	return c
}
