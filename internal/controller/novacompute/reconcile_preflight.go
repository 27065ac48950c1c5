package novacompute

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/workload"
)

const (
	// preflightPoll paces a pass while the check runs; the Job's watch
	// usually brings the next pass sooner.
	preflightPoll = 5 * time.Second
	// preflightRetry is how long a failed check is kept, for its log,
	// before it runs again: a fix outside the contract, such as a
	// firewall rule, is found without touching the pool.
	preflightRetry = 30 * time.Second
)

// reconcilePreflight runs the pool's preflight Job on its cluster for the
// contract's current endpoints and records whether it passed. A verdict,
// failed or not, never stops the pass, since later steps must still drain;
// the DaemonSet step writes nothing new until the check has passed. Only an
// error reading or writing the Job, or a Job of its name that is not the
// pool's, stops it.
func (r *Reconciler) reconcilePreflight(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	if p.deleting {
		// A pool on its way out starts nothing new to check for.
		p.preflightPassed = true
		return flow.Continue, nil
	}
	if !hasNodeToCheckFrom(pool.Status.Nodes) {
		conditionsOf(pool).Set(novav1alpha1.PreflightReadyCondition, metav1.ConditionTrue, novav1alpha1.NoNodeToCheckFromReason,
			"the pool has no node to run the check on; it runs when one joins")
		return flow.Continue, nil
	}
	live := &batchv1.Job{}
	err := p.cluster.Reader.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: PreflightJobName(pool.Name)}, live)
	switch {
	case apierrors.IsNotFound(err):
		return r.startPreflight(ctx, p, "checking")
	case err != nil:
		return flow.Continue, flow.Fail(novav1alpha1.PreflightReadyCondition, novav1alpha1.PreflightErrorReason,
			fmt.Errorf("reading the preflight Job: %w", err))
	case !childwriter.Controls(pool, live, r.Scheme):
		return flow.Continue, flow.Invalid(novav1alpha1.PreflightReadyCondition, novav1alpha1.PreflightErrorReason,
			fmt.Errorf("a Job %s/%s exists that is not the pool's; rename or delete it", live.Namespace, live.Name))
	case !live.DeletionTimestamp.IsZero():
		return r.preflightRunning(p, "the previous check is being removed"), nil
	case live.Annotations[PreflightHashAnnotation] != p.preflightHash:
		return r.retirePreflight(ctx, p, live, "the contract's endpoints changed; checking them again")
	}
	done, failed, at := workload.JobFinished(live)
	switch {
	case !done:
		return r.preflightRunning(p, "checking"), nil
	case !failed:
		r.preflightVerdict(p, metav1.ConditionTrue, novav1alpha1.PreflightPassedReason, fmt.Sprintf(
			"from %s, the message bus at %s, Keystone at %s and Placement answered and accepted the contract's credentials",
			clusterName(p), p.endpoints.Bus, p.endpoints.Keystone))
		p.preflightPassed = true
		return flow.Continue, nil
	}
	reason, message, err := r.preflightFailure(ctx, p, live)
	if err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.PreflightReadyCondition, novav1alpha1.PreflightErrorReason, err)
	}
	r.preflightVerdict(p, metav1.ConditionFalse, reason, message)
	if wait := preflightRetry - r.now().Sub(at.Time); wait > 0 {
		return flow.Requeue(wait), nil
	}
	return r.retirePreflight(ctx, p, live, message+"; checking again")
}

// startPreflight creates the Job for the current contract.
func (r *Reconciler) startPreflight(ctx context.Context, p *pass, what string) (flow.Outcome, error) {
	job := BuildPreflightJob(p.pool, PreflightInput{Image: p.image, PullPolicy: p.pullPolicy,
		ContractSecret: p.contractSecret, Hash: p.preflightHash, Nodes: p.pool.Status.Nodes})
	// A Job runs once; it is created, never updated.
	if err := p.cluster.Apply(ctx, p.pool, job, childwriter.CreateOnly); err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.PreflightReadyCondition, novav1alpha1.PreflightErrorReason,
			fmt.Errorf("creating the preflight Job: %w", err))
	}
	return r.preflightRunning(p, what), nil
}

// retirePreflight deletes a Job that checked other endpoints, or failed
// long enough ago; the next pass starts a new one.
func (r *Reconciler) retirePreflight(ctx context.Context, p *pass, live *batchv1.Job, why string) (flow.Outcome, error) {
	if _, err := p.cluster.Delete(ctx, p.pool, live); err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.PreflightReadyCondition, novav1alpha1.PreflightErrorReason,
			fmt.Errorf("deleting the preflight Job: %w", err))
	}
	return r.preflightRunning(p, why), nil
}

// preflightRunning reports a check in progress, keeping a failure's
// reason visible until a verdict replaces it.
func (r *Reconciler) preflightRunning(p *pass, what string) flow.Outcome {
	if c := apimeta.FindStatusCondition(p.pool.Status.Conditions, novav1alpha1.PreflightReadyCondition); c == nil || c.Status == metav1.ConditionTrue {
		conditionsOf(p.pool).Set(novav1alpha1.PreflightReadyCondition, metav1.ConditionFalse, novav1alpha1.PreflightRunningReason,
			fmt.Sprintf("%s that %s reaches the message bus at %s, Keystone at %s and Placement", what, clusterName(p), p.endpoints.Bus, p.endpoints.Keystone))
	}
	return flow.Requeue(preflightPoll)
}

// preflightVerdict sets PreflightReady and records an event when the
// verdict is new: a Warning for each new failure, a Normal for a pass
// that follows a check.
func (r *Reconciler) preflightVerdict(p *pass, status metav1.ConditionStatus, reason, message string) {
	// A copy: Set changes the condition the list holds in place.
	var prev *metav1.Condition
	if c := apimeta.FindStatusCondition(p.pool.Status.Conditions, novav1alpha1.PreflightReadyCondition); c != nil {
		prev = c.DeepCopy()
	}
	conditionsOf(p.pool).Set(novav1alpha1.PreflightReadyCondition, status, reason, message)
	switch {
	case prev != nil && prev.Reason == reason && prev.Message == message:
	case status == metav1.ConditionFalse:
		r.event(p.pool, nil, true, novav1alpha1.PreflightFailedEvent, "Preflight", "%s: %s", reason, message)
	case prev != nil && prev.Reason != novav1alpha1.NoNodeToCheckFromReason:
		r.event(p.pool, nil, false, novav1alpha1.PreflightPassedEvent, "Preflight", "%s", message)
	}
}

// preflightFailure reads the exit code of the failed Job's pod and turns
// it into PreflightReady's reason and message.
func (r *Reconciler) preflightFailure(ctx context.Context, p *pass, job *batchv1.Job) (string, string, error) {
	pods := &corev1.PodList{}
	if err := p.reader().List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", "", fmt.Errorf("listing the preflight Job's pods: %w", err)
	}
	for _, pod := range pods.Items {
		if !metav1.IsControlledBy(&pod, job) {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == preflightContainer && cs.State.Terminated != nil {
				reason, msg := DecidePreflightFailure(cs.State.Terminated.ExitCode, p.endpoints, clusterName(p))
				return reason, msg, nil
			}
		}
	}
	// No container ended: the Job's own deadline or a pod that never ran.
	why := "its pod never ran"
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason != "" {
			why = "the Job failed with " + c.Reason
		}
	}
	return novav1alpha1.PreflightErrorReason, fmt.Sprintf("the check on %s did not finish: %s; see Job %s/%s", clusterName(p), why, job.Namespace, job.Name), nil
}

// hasNodeToCheckFrom tells whether a node of the pool may run the check:
// one that is joining or active.
func hasNodeToCheckFrom(nodes []novav1alpha1.NovaComputeNode) bool {
	for _, n := range nodes {
		if n.Phase == novav1alpha1.NodePending || n.Phase == novav1alpha1.NodeActive {
			return true
		}
	}
	return false
}

// clusterName names the pool's cluster in messages.
func clusterName(p *pass) string {
	if p.cluster.Cluster == "" {
		return "the management cluster"
	}
	return "compute cluster " + p.cluster.Cluster
}
