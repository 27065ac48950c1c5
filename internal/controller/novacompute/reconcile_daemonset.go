package novacompute

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/workload"
)

// reconcileDaemonSet writes {pool}-nova-compute, or deletes it when no node
// needs a pod, and mirrors its counters into the status.
func (r *Reconciler) reconcileDaemonSet(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	if !p.preflightPassed {
		if held, err := r.holdDaemonSet(ctx, p); held || err != nil {
			return flow.Continue, err
		}
	}
	// The Policy step, first in the pass, refused a pool the policy
	// forbids before this step could write its DaemonSet.
	desired := BuildDaemonSet(pool, DaemonSetInput{
		Image: p.image, PullPolicy: p.pullPolicy, ContractSecret: p.contractSecret, PoolConfigMap: p.poolConfigMap,
		ContractHash: p.contractHash, Nodes: pool.Status.Nodes, Deleting: p.deleting,
	})
	if desired == nil {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(pool.Name), Namespace: pool.Namespace}}
		if _, err := p.cluster.Delete(ctx, pool, ds); err != nil {
			return flow.Continue, flow.Fail(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetErrorReason,
				fmt.Errorf("deleting DaemonSet %s: %w", ds.Name, err))
		}
		pool.Status.DesiredNumberScheduled, pool.Status.NumberReady = 0, 0
		// No pod runs an older contract.
		if p.contractHash != "" {
			pool.Status.RolledOutContractHash = p.contractHash
		}
		conditionsOf(pool).Set(novav1alpha1.DaemonSetReadyCondition, metav1.ConditionTrue, novav1alpha1.DaemonSetReadyReason, "no node needs a nova-compute pod")
		return flow.Continue, nil
	}
	ds := desired
	if err := p.cluster.Apply(ctx, pool, ds); err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetErrorReason,
			fmt.Errorf("writing DaemonSet %s: %w", desired.Name, err))
	}
	st := ds.Status
	pool.Status.DesiredNumberScheduled, pool.Status.NumberReady = st.DesiredNumberScheduled, st.NumberReady
	if done, _ := workload.DaemonSetRolledOut(ds); !done {
		conditionsOf(pool).Set(novav1alpha1.DaemonSetReadyCondition, metav1.ConditionFalse, novav1alpha1.DaemonSetProgressingReason,
			fmt.Sprintf("Waiting for the nova-compute DaemonSet: %d of %d nodes run a ready pod", st.NumberReady, st.DesiredNumberScheduled))
		// Not a wait that stops the pass: the Services step must still drain.
		return flow.Requeue(shortRequeue), nil
	}
	pool.Status.InstalledImage = p.image
	pool.Status.RolledOutContractHash = ds.Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation]
	conditionsOf(pool).Set(novav1alpha1.DaemonSetReadyCondition, metav1.ConditionTrue, novav1alpha1.DaemonSetReadyReason,
		fmt.Sprintf("%d of %d nodes run a ready, current pod", st.NumberReady, st.DesiredNumberScheduled))
	return flow.Continue, nil
}

// holdDaemonSet is the DaemonSet step while the preflight check has not
// passed for the contract: no DaemonSet is created for a pool with nodes,
// and an existing one keeps its template, so no hypervisor starts on, or rolls to, endpoints
// its cluster cannot use. Its counters are still mirrored. It does not
// hold an existing DaemonSet while a node drains, or when no node could
// run the check: the drain needs the DaemonSet to keep the leaving node's
// pod by name, which only a new rendering does, and the roll that comes
// with it is what a pool did before it had a preflight.
func (r *Reconciler) holdDaemonSet(ctx context.Context, p *pass) (bool, error) {
	pool := p.pool
	live := &appsv1.DaemonSet{}
	err := p.cluster.Reader.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: DaemonSetName(pool.Name)}, live)
	switch {
	case apierrors.IsNotFound(err) && !hasNodeToCheckFrom(pool.Status.Nodes):
		// A pool without nodes gets its DaemonSet as before: it runs
		// nothing, and its rendering follows the spec.
		return false, nil
	case apierrors.IsNotFound(err):
		pool.Status.DesiredNumberScheduled, pool.Status.NumberReady = 0, 0
		conditionsOf(pool).Set(novav1alpha1.DaemonSetReadyCondition, metav1.ConditionFalse, novav1alpha1.WaitingForPreflightReason,
			"the nova-compute DaemonSet is written once the preflight check passes")
		return true, nil
	case err != nil:
		return true, flow.Fail(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetErrorReason,
			fmt.Errorf("reading DaemonSet %s: %w", DaemonSetName(pool.Name), err))
	case !HoldsExistingDaemonSet(pool.Status.Nodes):
		return false, nil
	}
	pool.Status.DesiredNumberScheduled, pool.Status.NumberReady = live.Status.DesiredNumberScheduled, live.Status.NumberReady
	conditionsOf(pool).Set(novav1alpha1.DaemonSetReadyCondition, metav1.ConditionFalse, novav1alpha1.WaitingForPreflightReason,
		"the nova-compute DaemonSet keeps its current pods until the preflight check of the new contract passes")
	return true, nil
}

// HoldsExistingDaemonSet tells whether an existing DaemonSet keeps its
// template while the preflight check has not passed: only while a node
// could run the check and none drains. It is pure.
func HoldsExistingDaemonSet(nodes []novav1alpha1.NovaComputeNode) bool {
	return hasNodeToCheckFrom(nodes) && len(nodesInPhase(nodes, novav1alpha1.NodeDraining)) == 0
}
