package nova

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// jobPoll checks a running database Job again; the Job watch normally
// brings the next pass first.
const jobPoll = 10 * time.Second

// reconcileDatabase runs the rollout's database Jobs one after the other.
// The pass stops at the first Job that has not succeeded, so no Deployment
// moves to a new release or image before its schema is there. A failed Job
// is reported by name and left in place: deleting it runs it again.
func (r *Reconciler) reconcileDatabase(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova, children := p.nova, p.children
	rollout := RolloutHash(nova, DatabaseHash(p.manageConf, p.contract.TransportURL))
	for _, step := range databaseSteps {
		job := BuildDatabaseJob(nova, step, rollout)
		// A Job's template is immutable once it runs, and a finished one
		// is the record that its step is done: create, never update.
		if err := children.Apply(ctx, nova, job, childwriter.CreateOnly); err != nil {
			return flow.Continue, databaseError(err)
		}
		switch StateOf(job) {
		case JobFailed:
			return flow.Continue, flow.Invalid(novav1alpha1.DatabaseReadyCondition, novav1alpha1.DatabaseJobFailedReason,
				fmt.Errorf("database Job %s failed; the Deployments stay on their templates until it succeeds (delete the Job to run it again)", job.Name))
		case JobRunning:
			return flow.Continue, flow.Wait(novav1alpha1.DatabaseReadyCondition, novav1alpha1.DatabaseJobRunningReason, jobPoll,
				"waiting for database Job %s", job.Name)
		}
		recordCell(nova, step)
	}
	if err := r.pruneDatabaseJobs(ctx, p, rollout); err != nil {
		return flow.Continue, err
	}
	conditionsOf(nova).Set(novav1alpha1.DatabaseReadyCondition, metav1.ConditionTrue, novav1alpha1.DatabaseSyncedReason,
		"every database Job of release "+nova.Spec.OpenStackRelease+" succeeded")
	return flow.Continue, nil
}

// recordCell notes in status.cells what a succeeded step proves.
func recordCell(nova *novav1alpha1.Nova, step DatabaseStep) {
	if step.Maps != "" {
		setCell(nova, step.Maps, func(c *novav1alpha1.CellStatus) { c.Mapped = true })
	}
	if step.Syncs {
		// db sync moves cell0's schema along with the main cell's.
		for _, name := range []string{"cell0", "cell1"} {
			setCell(nova, name, func(c *novav1alpha1.CellStatus) { c.SyncedRelease = nova.Spec.OpenStackRelease })
		}
	}
}

// setCell changes one entry of status.cells, adding it in cell order.
func setCell(nova *novav1alpha1.Nova, name string, change func(*novav1alpha1.CellStatus)) {
	for i := range nova.Status.Cells {
		if nova.Status.Cells[i].Name == name {
			change(&nova.Status.Cells[i])
			return
		}
	}
	c := novav1alpha1.CellStatus{Name: name}
	change(&c)
	nova.Status.Cells = append(nova.Status.Cells, c)
	if len(nova.Status.Cells) == 2 && nova.Status.Cells[0].Name == "cell1" {
		nova.Status.Cells[0], nova.Status.Cells[1] = nova.Status.Cells[1], nova.Status.Cells[0]
	}
}

// pruneDatabaseJobs deletes the database Jobs of earlier rollouts once the
// current one has succeeded; until then they are the record of the last
// good rollout.
func (r *Reconciler) pruneDatabaseJobs(ctx context.Context, p *pass, rollout string) error {
	list := &batchv1.JobList{}
	if err := p.children.Reader.List(ctx, list, client.InNamespace(p.nova.Namespace),
		client.MatchingLabels{instanceLabel: p.nova.Name, componentLabel: databaseComponent}); err != nil {
		return err
	}
	for i := range list.Items {
		job := &list.Items[i]
		if job.Labels[RolloutLabel] == rollout {
			continue
		}
		if _, err := p.children.Delete(ctx, p.nova, job); err != nil {
			return err
		}
	}
	return nil
}

// databaseError classifies a failure to write a Job: a same-named Job that
// is not Anvil's is invalid, anything else is retried.
func databaseError(err error) error {
	var notOwned *childwriter.NotOwnedError
	if errors.As(err, &notOwned) {
		return flow.Invalid(novav1alpha1.DatabaseReadyCondition, novav1alpha1.DatabaseJobFailedReason, err)
	}
	return err
}
