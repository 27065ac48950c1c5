// Package nova reconciles Nova objects: it runs Nova's control plane and
// publishes what hypervisors need to join it. A pass
//   - refuses a Keystone URL whose host the operator does not admit;
//   - publishes the compute contract, {nova}-compute-config, and while
//     remoteCompute is set its remote form {nova}-remote-compute-config;
//   - publishes {nova}-manage-config, the databases the pools' host
//     discovery Jobs reach;
//   - publishes {nova}-config, the nova.conf of the control plane;
//   - writes the metadata API's HTTPRoute while spec.metadata.gateway is set;
//   - runs the database Jobs of the release and image in order;
//   - rolls the conductor, then the scheduler, then the api, metadata and
//     console proxy Deployments, and then reports the installed release.
package nova

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/novaconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

// placedResync re-renders a Nova whose children live on another cluster.
// Its input Secrets live there too, unlabelled, so no watch sees them change.
const placedResync = 30 * time.Second

// childKinds are the kinds a Nova writes onto its children cluster; a
// placed Nova's teardown sweeps them.
var childKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "Service"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
}

// Reconciler reconciles Nova objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry resolves targetClusterRef; nil turns placed Novas off.
	Registry *targetcluster.Registry
	// Teardown removes a placed Nova's children on deletion.
	Teardown *placement.Teardown
	// Recorder records the events of condition transitions.
	Recorder events.EventRecorder
	// Keystone limits the hosts a Nova may send its service password to;
	// the zero value admits only an owning ControlPlane's Keystone.
	Keystone keystonepolicy.Policy
}

// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;patch;delete

// pass is what one pass over a Nova builds up, step by step.
type pass struct {
	nova *novav1alpha1.Nova
	// children is where the children live. Set by Cluster.
	children *childwriter.Writer
	// contract is the compute contract's input, read by ComputeConfig.
	contract *novaconfig.ContractInput
	// manage holds the databases, read by ManageConfig; nil when none is
	// declared.
	manage *novaconfig.ManageInput
	// manageConf is nova-manage.conf as ManageConfig rendered it.
	manageConf []byte
	// configHash is the hash of {nova}-config, set by ServiceConfig.
	configHash string
}

// steps are the pass's steps in order, each with the condition it owns.
func (r *Reconciler) steps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: novav1alpha1.ComputeConfigReadyCondition, Run: r.reconcileKeystonePolicy},
		{Condition: novav1alpha1.ComputeConfigReadyCondition, Run: r.place},
		{Condition: novav1alpha1.ComputeConfigReadyCondition, Run: r.reconcileComputeConfig},
		{Condition: novav1alpha1.ManageConfigReadyCondition, Run: r.reconcileManageConfig},
		{Condition: novav1alpha1.ServiceConfigReadyCondition, Run: r.reconcileServiceConfig},
		{Condition: novav1alpha1.MetadataHTTPRouteReadyCondition, Run: r.reconcileMetadataRoute},
		{Condition: novav1alpha1.DatabaseReadyCondition, Run: r.reconcileDatabase},
		{Condition: novav1alpha1.DeploymentsReadyCondition, Run: r.reconcileDeployments},
	}
}

// Reconcile brings one Nova's contract up to date. It reads like a table of
// contents: get, defer the status patch, take the deletion branch, then run
// the steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	nova := &novav1alpha1.Nova{}
	if err := r.Client.Get(ctx, req.NamespacedName, nova); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := nova.DeepCopy()
	p := &pass{nova: nova}
	var passErr error
	defer func() {
		flow.JoinPatchError(&res, &retErr, r.patchStatus(ctx, before, nova, passErr))
	}()

	if !nova.DeletionTimestamp.IsZero() {
		return r.placement().Release(ctx, nova, conditionsOf(nova))
	}
	var out flow.Outcome
	out, passErr = flow.Run(ctx, conditionsOf(nova), p, r.steps())
	return flow.Result(out, passErr)
}

// placement is the Nova's part of the placement protocol: the
// condition that reports an unusable cluster, how soon it looks again, and
// the kinds of its children.
func (r *Reconciler) placement() placement.Protocol {
	// The Nova reads its children through the cache, so it needs no
	// APIReader.
	return placement.Protocol{Client: r.Client, Scheme: r.Scheme, Registry: r.Registry, Teardown: r.Teardown,
		Condition: novav1alpha1.ComputeConfigReadyCondition, Poll: placement.UnavailableRequeue, Kinds: childKinds}
}

// place resolves where the children live and, for a placed Nova,
// holds it with the remote-children finalizer before anything is written
// there; a cluster that cannot be used stops the pass.
func (r *Reconciler) place(ctx context.Context, p *pass) (flow.Outcome, error) {
	at, err := placement.Resolve(ctx, r.placement(), p.nova)
	if err != nil {
		return flow.Continue, err
	}
	p.children = at.Children
	if at.Remote() {
		return flow.Requeue(placedResync), nil
	}
	return flow.Continue, nil
}

// patchStatus ends every pass: the shared rollup derives Ready, records
// the transition events and writes what changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, nova *novav1alpha1.Nova, passErr error) error {
	return conditions.PatchStatus(ctx, r.Client, r.Recorder, before, nova, &before.Status.CommonStatus, &nova.Status.CommonStatus, passErr, r.summary())
}

// summary is how a Nova's Ready is derived and its events recorded.
func (r *Reconciler) summary() conditions.Summary {
	return conditions.Summary{
		Steps:        flow.StepConditions(r.steps()),
		ReadyMessage: "the control plane runs its release and the compute contract is current",
		Events:       transitionEvents,
	}
}
