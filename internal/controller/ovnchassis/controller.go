// Package ovnchassis reconciles OVNChassis objects: Open vSwitch and
// ovn-controller on the selected nodes of a cluster, connected to an
// OVNCentral on the same or another cluster. A pass
//   - resolves the central and the addresses the chassis dial;
//   - copies the central's client identity next to the chassis when they
//     live on different clusters;
//   - renders one entry per node, keeping each node's system-id for life;
//   - issues each node an identity of its own, named by its system-id;
//   - runs the OVS DaemonSet, then the ovn-controller DaemonSet;
//   - runs the maintenance Jobs of changed, demoted and departed nodes.
//
// docs/design/ovn.md is the contract of what runs in the pods.
package ovnchassis

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// Requeue intervals.
const (
	// centralPoll polls a central that is not ready, a held cluster and a
	// client identity cert-manager has not issued yet.
	centralPoll = 15 * time.Second
	// daemonSetPoll polls a rolling DaemonSet.
	daemonSetPoll = 10 * time.Second
	// maintenancePoll polls running or deferred maintenance Jobs.
	maintenancePoll = 15 * time.Second
)

// childKinds are what a chassis writes onto its children's cluster; a
// placed chassis's teardown sweeps them, the client copy among them.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Version: "v1", Kind: "Secret"},
}

// Reconciler reconciles OVNChassis objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// APIReader reads the management cluster without a cache.
	APIReader client.Reader
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry resolves targetClusterRef; nil turns placed chassis off.
	Registry *targetcluster.Registry
	// Teardown removes a placed chassis's children on deletion.
	Teardown *placement.Teardown
	// Recorder records the events of condition transitions.
	Recorder events.EventRecorder
	// Policy is what a chassis may run; the webhook checks the same.
	Policy workloadpolicy.Policy
}

// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovnchassis,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovnchassis/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovnchassis/finalizers,verbs=update
// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovncentrals,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// pass is what one pass over a chassis builds up, step by step.
type pass struct {
	chassis *ovnv1alpha1.OVNChassis
	// children is where the children live, live reads that cluster
	// without a cache. Set by Cluster.
	children *childwriter.Writer
	live     client.Reader
	// central and addrs are the resolved central. Set by Central.
	central *ovnv1alpha1.OVNCentral
	addrs   CentralAddresses
	// resolved is CentralReady's message once everything resolved.
	resolved string
	// entries are the rendered nodes. Set by Nodes.
	entries []NodeEntry
	// scriptsHash is the hash of the scripts ConfigMap. Set by Nodes.
	scriptsHash string
	// ovsReady is set by OVS when every OVS pod runs its template.
	ovsReady bool
}

// steps are the pass's steps in order, each with the condition it owns.
func (r *Reconciler) steps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: ovnv1alpha1.CentralReadyCondition, Run: r.reconcilePolicy},
		{Condition: ovnv1alpha1.CentralReadyCondition, Run: r.place},
		{Condition: ovnv1alpha1.CentralReadyCondition, Run: r.reconcileCentral},
		{Condition: ovnv1alpha1.CentralReadyCondition, Run: r.reconcileClientSecret},
		{Condition: ovnv1alpha1.NodesReadyCondition, Run: r.reconcileNodes},
		{Condition: ovnv1alpha1.NodesReadyCondition, Run: r.reconcileIdentities},
		{Condition: ovnv1alpha1.OVSReadyCondition, Run: r.reconcileOVS},
		{Condition: ovnv1alpha1.ControllerReadyCondition, Run: r.reconcileController},
		{Condition: ovnv1alpha1.MaintenanceReadyCondition, Run: r.reconcileMaintenance},
	}
}

// Reconcile brings one chassis up to date: get, defer the status patch,
// take the deletion branch, then run the steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	chassis := &ovnv1alpha1.OVNChassis{}
	if err := r.Client.Get(ctx, req.NamespacedName, chassis); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := chassis.DeepCopy()
	p := &pass{chassis: chassis}
	var passErr error
	defer func() {
		flow.JoinPatchError(&res, &retErr, r.patchStatus(ctx, before, chassis, passErr))
	}()

	if !chassis.DeletionTimestamp.IsZero() {
		return r.placement().Release(ctx, chassis, conditionsOf(chassis))
	}
	var out flow.Outcome
	out, passErr = flow.Run(ctx, conditionsOf(chassis), p, r.steps())
	return flow.Result(out, passErr)
}

// reconcilePolicy refuses a chassis the workload policy forbids before
// the pass reads or writes anything for it, the client identity's copy
// included. The refusal is reported on OVSReady, the condition of the
// first privileged DaemonSet it withholds.
func (r *Reconciler) reconcilePolicy(ctx context.Context, p *pass) (flow.Outcome, error) {
	return flow.Continue, flow.EnforceWorkloadPolicy(ctx, r.APIReader, flow.PolicyCheck{
		Namespace:   p.chassis.Namespace,
		Refusals:    r.Policy.CheckOVNChassis(p.chassis),
		Condition:   ovnv1alpha1.OVSReadyCondition,
		ErrorReason: ovnv1alpha1.DaemonSetErrorReason,
		Recheck:     centralPoll,
	})
}

// placement is the chassis's part of the placement protocol: the
// condition that reports an unusable cluster, how soon it looks again, and
// the kinds of its children.
func (r *Reconciler) placement() placement.Protocol {
	return placement.Protocol{Client: r.Client, Scheme: r.Scheme, APIReader: r.APIReader, Registry: r.Registry, Teardown: r.Teardown,
		Condition: ovnv1alpha1.CentralReadyCondition, Poll: centralPoll, Kinds: childKinds}
}

// place resolves where the children live and, for a placed chassis,
// holds it with the remote-children finalizer before anything is written
// there; a cluster that cannot be used stops the pass.
func (r *Reconciler) place(ctx context.Context, p *pass) (flow.Outcome, error) {
	at, err := placement.Resolve(ctx, r.placement(), p.chassis)
	if err != nil {
		return flow.Continue, err
	}
	p.children, p.live = at.Children, at.Live
	return flow.Continue, nil
}

// patchStatus ends every pass: the shared rollup derives Ready, records
// the transition events and writes what changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, c *ovnv1alpha1.OVNChassis, passErr error) error {
	return conditions.PatchStatus(ctx, r.Client, r.Recorder, before, c, &before.Status.CommonStatus, &c.Status.CommonStatus, passErr, r.summary())
}

// summary is how a chassis's Ready is derived and its events recorded.
func (r *Reconciler) summary() conditions.Summary {
	return conditions.Summary{
		Steps:        flow.StepConditions(r.steps()),
		ReadyMessage: "every selected node runs Open vSwitch and ovn-controller connected to the central",
		Events:       transitionEvents,
	}
}

// newSystemID mints a random version 4 UUID, the form OVN expects of a
// system-id.
func newSystemID() string { return string(uuid.NewUUID()) }
