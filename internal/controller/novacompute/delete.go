package novacompute

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/placement"
)

// reconcileDelete drains every node the pool holds, then lets the pool go:
// while a pass begins with nodes held, the whole pipeline runs with nothing
// selected; once one begins with none, only NovaRef and Aggregates run, so
// the zones the pool alone needed are reaped. Then its children on the
// compute cluster are swept, the delivered contract is reaped if no other
// pool uses the cluster, and the finalizers are released.
func (r *Reconciler) reconcileDelete(ctx context.Context, p *pass) (ctrl.Result, error) {
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
	}
	if pool.TargetClusterName() != "" && controllerutil.ContainsFinalizer(pool, placement.RemoteChildrenFinalizer) {
		res, err := r.Teardown.Run(ctx, pool, childKinds)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !res.Release {
			setCondition(pool, novav1alpha1.NovaReadyCondition, metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, res.Unavailable.Error())
			return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
		}
		if remote, err := r.Registry.Resolve(pool.TargetClusterName()); err == nil {
			if _, err := ReapComputeConfigMirrors(ctx, r.Client, remote.Writer(), r.Recorder, pool); err != nil {
				return ctrl.Result{}, fmt.Errorf("reaping the delivered contract: %w", err)
			}
		}
	}
	patch := client.MergeFrom(pool.DeepCopy())
	controllerutil.RemoveFinalizer(pool, novav1alpha1.ComputeDrainFinalizer)
	controllerutil.RemoveFinalizer(pool, placement.RemoteChildrenFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, pool, patch))
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
