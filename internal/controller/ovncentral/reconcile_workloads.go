package ovncentral

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/workload"
)

// reconcileNorthd runs northd and stamps the installed image once it runs
// everywhere. A rollout in progress is reported and polled, but does not
// stop the relay or the backups from being reconciled.
func (r *Reconciler) reconcileNorthd(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.central
	d := BuildNorthd(c, p.scriptsHash)
	if err := p.children.Apply(ctx, c, d); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.NorthdReadyCondition, ovnv1alpha1.DeploymentErrorReason, err)
	}
	if done, why := DeploymentRolledOut(d); !done {
		conditionsOf(c).Set(ovnv1alpha1.NorthdReadyCondition, metav1.ConditionFalse, ovnv1alpha1.DeploymentProgressingReason, why)
		return flow.Requeue(RequeueDeploymentPolling), nil
	}
	c.Status.InstalledImage = c.ResolvedImage()
	conditionsOf(c).Set(ovnv1alpha1.NorthdReadyCondition, metav1.ConditionTrue, ovnv1alpha1.DeploymentReadyReason,
		"northd runs "+c.Status.InstalledImage+" on every replica")
	return flow.Continue, nil
}

// reconcileRelay runs the Southbound relay while spec.relay is set and
// publishes its addresses; without it, it removes the relay and clears
// them.
func (r *Reconciler) reconcileRelay(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.central
	if c.Spec.Relay == nil {
		return flow.Continue, r.removeRelay(ctx, p)
	}
	svc := BuildRelayService(c)
	d := BuildRelay(c, p.scriptsHash)
	for _, obj := range []client.Object{svc, d} {
		if err := p.children.Apply(ctx, c, obj); err != nil {
			return flow.Continue, workload.WriteError(ovnv1alpha1.RelayReadyCondition, ovnv1alpha1.DeploymentErrorReason, err)
		}
	}
	if svc.Spec.ClusterIP == "" {
		conditionsOf(c).Set(ovnv1alpha1.RelayReadyCondition, metav1.ConditionFalse, ovnv1alpha1.ServicePendingReason,
			"the relay's Service has no cluster IP yet")
		return flow.Requeue(RequeueRaftWait), nil
	}
	c.Status.RelayAddress = sslAddress(svc.Spec.ClusterIP, relayPort)
	r.publishRelayNodes(ctx, p)
	if done, why := DeploymentRolledOut(d); !done {
		conditionsOf(c).Set(ovnv1alpha1.RelayReadyCondition, metav1.ConditionFalse, ovnv1alpha1.DeploymentProgressingReason, why)
		return flow.Requeue(RequeueDeploymentPolling), nil
	}
	conditionsOf(c).Set(ovnv1alpha1.RelayReadyCondition, metav1.ConditionTrue, ovnv1alpha1.DeploymentReadyReason,
		"the relay serves the southbound at "+c.Status.RelayAddress)
	return flow.Continue, nil
}

// publishRelayNodes sets relayDbAddress from the nodes running relay pods
// while the relay is externally reachable. When the pods cannot be listed
// the last value stays, unless it names another node port than the
// current one: an address that is known wrong is worse than none.
func (r *Reconciler) publishRelayNodes(ctx context.Context, p *pass) {
	c := p.central
	if !c.Spec.Relay.ExternallyReachable {
		c.Status.RelayDBAddress = ""
		return
	}
	port := c.Spec.Relay.ResolvedNodePort()
	pods := &corev1.PodList{}
	if err := p.live.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(selector(c, relayComponent))); err != nil {
		if !AddressesUsePort(c.Status.RelayDBAddress, port) {
			c.Status.RelayDBAddress = ""
		}
		return
	}
	var hosts []string
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp.IsZero() {
			hosts = append(hosts, pods.Items[i].Status.HostIP)
		}
	}
	c.Status.RelayDBAddress = DecideRelayNodeAddresses(hosts, port)
}

// removeRelay deletes the relay's Deployment and Service and clears its
// addresses.
func (r *Reconciler) removeRelay(ctx context.Context, p *pass) error {
	c := p.central
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		obj.SetNamespace(c.Namespace)
		obj.SetName(RelayName(c))
		if _, err := p.children.Delete(ctx, c, obj); err != nil {
			return fmt.Errorf("removing the relay: %w", err)
		}
	}
	c.Status.RelayAddress, c.Status.RelayDBAddress = "", ""
	conditionsOf(c).Set(ovnv1alpha1.RelayReadyCondition, metav1.ConditionTrue, ovnv1alpha1.RelayNotRequiredReason, "spec.relay is not set")
	return nil
}

// reconcileBackup writes the backup claim and CronJob and reports the
// newest finished run.
func (r *Reconciler) reconcileBackup(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.central
	pvc := BuildBackupClaim(c)
	if err := p.children.Apply(ctx, c, pvc); err != nil {
		// A claim's class and a smaller size cannot change once it exists;
		// the apiserver refuses, and only a person can move the backups.
		if apierrors.IsInvalid(err) {
			return flow.Continue, flow.Invalid(ovnv1alpha1.BackupReadyCondition, ovnv1alpha1.BackupPVCInvalidReason,
				fmt.Errorf("the backup claim %s cannot take spec.backup.storage: %w", pvc.Name, err))
		}
		return flow.Continue, workload.WriteError(ovnv1alpha1.BackupReadyCondition, ovnv1alpha1.BackupPVCInvalidReason, err)
	}
	if pvc.Status.Phase == corev1.ClaimLost {
		return flow.Continue, flow.Invalid(ovnv1alpha1.BackupReadyCondition, ovnv1alpha1.BackupPVCInvalidReason,
			fmt.Errorf("the backup claim %s lost its volume", pvc.Name))
	}
	if err := p.children.Apply(ctx, c, BuildBackupCronJob(c, p.scriptsHash)); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.BackupReadyCondition, ovnv1alpha1.BackupErrorReason, err)
	}
	jobs := &batchv1.JobList{}
	if err := p.children.Reader.List(ctx, jobs, client.InNamespace(c.Namespace), client.MatchingLabels(labels(c, backupComponent))); err != nil {
		return flow.Continue, flow.Fail(ovnv1alpha1.BackupReadyCondition, ovnv1alpha1.BackupErrorReason, fmt.Errorf("listing backup Jobs: %w", err))
	}
	if failed := NewestFinishedBackup(jobs.Items); failed != nil && jobFailed(failed) {
		conditionsOf(c).Set(ovnv1alpha1.BackupReadyCondition, metav1.ConditionFalse, ovnv1alpha1.BackupJobFailedReason,
			"the backup Job "+failed.Name+" failed; inspect its pod's log")
		return flow.Continue, nil
	}
	if c.Spec.ResolvedBackup().Suspend {
		conditionsOf(c).Set(ovnv1alpha1.BackupReadyCondition, metav1.ConditionTrue, ovnv1alpha1.BackupSuspendedReason, "spec.backup.suspend is set")
		return flow.Continue, nil
	}
	conditionsOf(c).Set(ovnv1alpha1.BackupReadyCondition, metav1.ConditionTrue, ovnv1alpha1.BackupScheduledReason,
		"both databases are backed up on the schedule "+c.Spec.ResolvedBackup().Schedule)
	return flow.Continue, nil
}

// reconcileVPA reports that no vertical autoscaling is configured: Anvil
// does not manage VerticalPodAutoscalers for the central.
func (r *Reconciler) reconcileVPA(_ context.Context, p *pass) (flow.Outcome, error) {
	conditionsOf(p.central).Set(ovnv1alpha1.VPAReadyCondition, metav1.ConditionTrue, ovnv1alpha1.VPANotRequiredReason,
		"no vertical autoscaling is configured")
	return flow.Continue, nil
}

// NewestFinishedBackup returns the most recently started backup Job that
// has finished, or nil. A later success clears an earlier failure; a run
// in progress changes nothing yet.
func NewestFinishedBackup(jobs []batchv1.Job) *batchv1.Job {
	var finished []*batchv1.Job
	for i := range jobs {
		if jobFailed(&jobs[i]) || jobSucceeded(&jobs[i]) {
			finished = append(finished, &jobs[i])
		}
	}
	if len(finished) == 0 {
		return nil
	}
	return slices.MaxFunc(finished, func(a, b *batchv1.Job) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return compareStrings(a.Name, b.Name)
	})
}

// jobFailed and jobSucceeded read a Job's terminal condition.
func jobFailed(j *batchv1.Job) bool    { return jobCondition(j, batchv1.JobFailed) }
func jobSucceeded(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) }

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// compareStrings orders names so that Jobs created in the same second
// still sort the same way every pass.
func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
