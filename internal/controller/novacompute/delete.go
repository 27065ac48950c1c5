package novacompute

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// drainThenRelease drains every node the pool holds, then lets the pool
// go: while a pass begins with nodes held, the whole pipeline runs with
// nothing selected; once one begins with none, only NovaRef and
// Aggregates run, so the zones the pool alone needed are reaped. Then the
// drain finalizer goes, and the placement protocol sweeps the pool's
// children on its compute cluster and releases the pool. What the
// ControlPlane delivered there is the ControlPlane's to withdraw, once
// the pool is gone.
func (r *Reconciler) drainThenRelease(ctx context.Context, p *pass) (ctrl.Result, error) {
	pool := p.pool
	if controllerutil.ContainsFinalizer(pool, novav1alpha1.ComputeDrainFinalizer) {
		if holdsNodes(pool.Status.Nodes) {
			return flow.Result(flow.Run(ctx, conditionsOf(pool), p, r.steps()))
		}
		out, err := flow.Run(ctx, conditionsOf(pool), p, r.reapSteps())
		if err != nil && !novaGoneOrUnreachable(err) {
			return flow.Result(out, err)
		}
		if holdsNodes(pool.Status.Nodes) {
			return flow.Result(flow.Requeue(shortRequeue), nil)
		}
		if err := flow.RemoveFinalizer(ctx, r.Client, pool, novav1alpha1.ComputeDrainFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.placement().Release(ctx, pool, conditionsOf(pool))
}

// reapSteps are the steps of a deleting pool that holds no node any more:
// resolve the Nova, confirm no node came back, and reap the zones only
// this pool needed.
func (r *Reconciler) reapSteps() []flow.Step[*pass] {
	var out []flow.Step[*pass]
	for _, s := range r.steps() {
		switch s.Condition {
		case novav1alpha1.NovaReadyCondition, novav1alpha1.NodesReadyCondition, novav1alpha1.AggregatesReadyCondition:
			out = append(out, s)
		}
	}
	return out
}

// holdsNodes tells whether any entry is held, that is not a Conflict.
func holdsNodes(nodes []novav1alpha1.NovaComputeNode) bool {
	for _, n := range nodes {
		if n.Phase != novav1alpha1.NodeConflict {
			return true
		}
	}
	return false
}

// novaGoneOrUnreachable tells whether a pass stopped because the Nova is
// gone, a cluster does not resolve, or the Nova's Keystone is one the
// operator refuses to authenticate at: then there is nothing it can reap
// in Nova, and the teardown decides about the cluster. A pool that still
// holds nodes never gets here; it keeps them until it can drain them.
func novaGoneOrUnreachable(err error) bool {
	switch flow.ReasonOf(err) {
	case novav1alpha1.NovaNotFoundReason, anvilmeta.TargetClusterUnavailableReason, novav1alpha1.KeystoneEndpointNotAllowedReason:
		return true
	}
	return false
}
