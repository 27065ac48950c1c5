package novacompute

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/targetcluster"
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
			return flow.Result(r.runSteps(ctx, p, r.pipeline()))
		}
		out, err := r.runSteps(ctx, p, []step{r.reconcileNovaRef, r.reconcileNodes, r.reconcileAggregates})
		if err != nil {
			return flow.Result(out, err)
		}
		if out.Halt && !novaGoneOrUnreachable(pool) {
			return flow.Result(out, nil)
		}
		if holdsNodes(pool.Status.Nodes) {
			return flow.Result(flow.Wait(shortRequeue), nil)
		}
	}
	if pool.TargetClusterName() != "" && controllerutil.ContainsFinalizer(pool, targetcluster.RemoteChildrenFinalizer) {
		res, err := r.Teardown.Run(ctx, pool, childKinds)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !res.Release {
			setCondition(pool, novav1alpha1.NovaReadyCondition, metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, res.Unavailable.Error())
			return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
		}
		if remote, err := r.Registry.Resolve(pool.TargetClusterName()); err == nil {
			if _, err := ReapComputeConfigMirrors(ctx, r.Client, readThrough{Client: remote.Client, reader: remote.Reader}, r.Recorder, pool); err != nil {
				return ctrl.Result{}, fmt.Errorf("reaping the delivered contract: %w", err)
			}
		}
	}
	patch := client.MergeFrom(pool.DeepCopy())
	controllerutil.RemoveFinalizer(pool, novav1alpha1.ComputeDrainFinalizer)
	controllerutil.RemoveFinalizer(pool, targetcluster.RemoteChildrenFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, pool, patch))
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

// novaGoneOrUnreachable tells whether the last NovaRef halted because the
// Nova is gone or a cluster does not resolve: then there is nothing left
// to reap in Nova, and the teardown decides about the cluster.
func novaGoneOrUnreachable(pool *novav1alpha1.NovaCompute) bool {
	c := apimeta.FindStatusCondition(pool.Status.Conditions, novav1alpha1.NovaReadyCondition)
	return c != nil && (c.Reason == novav1alpha1.NovaNotFoundReason || c.Reason == anvilmeta.TargetClusterUnavailableReason)
}

// readThrough is a compute cluster's client whose reads bypass the cache,
// so the reaper never decides on a stale label.
type readThrough struct {
	client.Client
	reader client.Reader
}

// Get reads from the apiserver.
func (c readThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

// List reads from the apiserver.
func (c readThrough) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}
