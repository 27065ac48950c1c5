package ovnchassis

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/workload"
)

// jobState is where one node's maintenance Job stands.
type jobState int

const (
	jobRunning jobState = iota
	jobDone
	jobFailed
	jobDeferred
)

// reconcileMaintenance walks the nodes in name order and runs the Job each
// needs (DecideMaintenance). A running Job does not hold other nodes; a
// failed one stops the walk and is reported until someone deletes it,
// which runs it again. A finished Job moves its node's status on and is
// deleted, so the Job of a later change never meets an old one.
func (r *Reconciler) reconcileMaintenance(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.chassis
	done := map[string]string{}
	running, deferred := 0, 0
	for _, a := range DecideMaintenance(p.entries, c.Status.Nodes) {
		state, job, err := r.runJob(ctx, p, a)
		if err != nil {
			return flow.Continue, flow.Fail(ovnv1alpha1.MaintenanceReadyCondition, ovnv1alpha1.MaintenanceErrorReason, err)
		}
		switch state {
		case jobDone:
			done[a.Entry.Name] = a.Kind
		case jobRunning:
			running++
		case jobDeferred:
			deferred++
		case jobFailed:
			c.Status.Nodes = RecordNodes(p.entries, c.Status.Nodes, done)
			conditionsOf(c).Set(ovnv1alpha1.MaintenanceReadyCondition, metav1.ConditionFalse, ovnv1alpha1.MaintenanceJobFailedReason,
				fmt.Sprintf("The %s Job %s for node %s failed; inspect its pod logs", a.Kind, job, a.Entry.Name))
			return flow.Continue, nil
		}
	}
	c.Status.Nodes = RecordNodes(p.entries, c.Status.Nodes, done)
	if err := r.dropDeparted(ctx, p, done); err != nil {
		return flow.Continue, flow.Fail(ovnv1alpha1.MaintenanceReadyCondition, ovnv1alpha1.MaintenanceErrorReason, err)
	}
	switch {
	case running > 0:
		conditionsOf(c).Set(ovnv1alpha1.MaintenanceReadyCondition, metav1.ConditionTrue, ovnv1alpha1.MaintenanceRunningReason,
			strconv.Itoa(running)+" maintenance Jobs are running")
		return flow.Requeue(maintenancePoll), nil
	case deferred > 0:
		conditionsOf(c).Set(ovnv1alpha1.MaintenanceReadyCondition, metav1.ConditionTrue, ovnv1alpha1.MaintenanceDeferredReason,
			strconv.Itoa(deferred)+" maintenance Jobs wait for the central's addresses")
		return flow.Requeue(maintenancePoll), nil
	}
	conditionsOf(c).Set(ovnv1alpha1.MaintenanceReadyCondition, metav1.ConditionTrue, ovnv1alpha1.MaintenanceIdleReason,
		"no node needs maintenance")
	return flow.Continue, nil
}

// runJob creates, follows or clears one node's Job.
func (r *Reconciler) runJob(ctx context.Context, p *pass, a NodeAction) (jobState, string, error) {
	c := p.chassis
	// A departed node's chassis is deleted with that node's identity,
	// which must be issued first.
	if (a.Kind == EvacuateJob && p.addrs.NB == "") || (a.Kind == ChassisDelJob && (p.addrs.SB == "" || a.Entry.IdentityHash == "")) {
		return jobDeferred, "", nil
	}
	want := BuildMaintenanceJob(c, a, p.addrs)
	children, reader := r.jobPlace(p, a.Kind)
	live := &batchv1.Job{}
	err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
	switch {
	case apierrors.IsNotFound(err):
		if err := children.Apply(ctx, c, want, childwriter.CreateOnly); err != nil {
			return 0, "", fmt.Errorf("creating Job %s: %w", want.Name, err)
		}
		return jobRunning, want.Name, nil
	case err != nil:
		return 0, "", fmt.Errorf("reading Job %s: %w", want.Name, err)
	}
	finished, failed, _ := workload.JobFinished(live)
	switch {
	case live.Annotations[configHashAnnotation] != want.Annotations[configHashAnnotation]:
		// The entry changed again since this Job was made; a finished one
		// makes way for the current entry's, a running one is waited for.
		if finished {
			return jobRunning, live.Name, r.deleteJob(ctx, p, children, live)
		}
		return jobRunning, live.Name, nil
	case failed:
		return jobFailed, live.Name, nil
	case finished:
		return jobDone, live.Name, r.deleteJob(ctx, p, children, live)
	}
	return jobRunning, live.Name, nil
}

// jobPlace is where a Job of kind runs and is read: the evacuate Job on
// the management cluster, every other on the chassis's cluster.
func (r *Reconciler) jobPlace(p *pass, kind string) (*childwriter.Writer, client.Reader) {
	if kind == EvacuateJob {
		return childwriter.Local(r.Client, r.Scheme), r.APIReader
	}
	return p.children, p.live
}

// deleteJob removes a finished Job the chassis owns, with its pods.
func (r *Reconciler) deleteJob(ctx context.Context, p *pass, children *childwriter.Writer, job *batchv1.Job) error {
	_, err := children.DeleteIf(ctx, job, func(live client.Object) bool {
		return childwriter.Controls(p.chassis, live, r.Scheme)
	})
	return err
}

// dropDeparted rewrites the nodes ConfigMap without the nodes whose
// chassis deletion finished, together with their status entries.
func (r *Reconciler) dropDeparted(ctx context.Context, p *pass, done map[string]string) error {
	kept := p.entries[:0:0]
	for _, e := range p.entries {
		if done[e.Name] != ChassisDelJob {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(p.entries) {
		return nil
	}
	p.entries = kept
	return p.children.Apply(ctx, p.chassis, BuildNodes(p.chassis, kept))
}
