package ovncentral

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/scriptfiles"
	"github.com/anvil/anvil/internal/controller/workload"
)

// reconcileScripts writes the scripts the pods run and remembers their
// hash for the pod templates.
func (r *Reconciler) reconcileScripts(ctx context.Context, p *pass) (flow.Outcome, error) {
	cm := BuildScripts(p.central)
	if err := p.children.Apply(ctx, p.central, cm); err != nil {
		return flow.Continue, workload.WriteError(ovnv1alpha1.NorthboundReadyCondition, ovnv1alpha1.StatefulSetErrorReason, err)
	}
	p.scriptsHash = scriptfiles.Hash(cm.Data)
	return flow.Continue, nil
}

// reconcileNorthbound brings up the Northbound Raft cluster.
func (r *Reconciler) reconcileNorthbound(ctx context.Context, p *pass) (flow.Outcome, error) {
	return r.reconcileDatabase(ctx, p, Northbound)
}

// reconcileSouthbound brings up the Southbound Raft cluster. It comes
// second only so that the pass reports one database at a time; neither
// needs the other to form.
func (r *Reconciler) reconcileSouthbound(ctx context.Context, p *pass) (flow.Outcome, error) {
	return r.reconcileDatabase(ctx, p, Southbound)
}

// reconcileDatabase writes one database's Services, PDB and StatefulSet and
// waits until every member runs the current template and knows its role.
func (r *Reconciler) reconcileDatabase(ctx context.Context, p *pass, d Database) (flow.Outcome, error) {
	c := p.central
	objs := []client.Object{BuildHeadlessService(c, d)}
	for i := range d.Spec(c).ResolvedReplicas() {
		objs = append(objs, BuildMemberService(c, d, i))
	}
	// The policy needs no right on a compute cluster's access chart: only a
	// central on the management cluster serves chassis (the chassis refuse
	// a placed one), so only there does it guard anything.
	if d.InternalPort != 0 && c.TargetClusterName() == "" {
		objs = append(objs, BuildSouthboundPolicy(c))
	}
	sts := BuildStatefulSet(c, d, p.scriptsHash)
	objs = append(objs, BuildDatabasePDB(c, d), sts)
	for _, obj := range objs {
		if err := p.children.Apply(ctx, c, obj); err != nil {
			return flow.Continue, workload.WriteError(d.Condition(), ovnv1alpha1.StatefulSetErrorReason, err)
		}
	}
	d.Status(c).ReadyReplicas = sts.Status.ReadyReplicas
	if done, why := StatefulSetRolledOut(sts, d); !done {
		return flow.Continue, flow.Wait(d.Condition(), ovnv1alpha1.StatefulSetProgressingReason, RequeueRaftWait, "%s", why)
	}
	conditionsOf(c).Set(d.Condition(), metav1.ConditionTrue, ovnv1alpha1.StatefulSetReadyReason,
		"all "+strconv.Itoa(int(sts.Status.ReadyReplicas))+" "+d.Short+" Raft members are ready")
	return flow.Continue, nil
}
