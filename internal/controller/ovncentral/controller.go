// Package ovncentral reconciles OVNCentral objects: the OVN Northbound and
// Southbound databases as Raft clusters, ovn-northd, an optional Southbound
// relay and the backups, with TLS from cert-manager. A pass
//   - issues the databases' server certificates and the client identity;
//   - brings up the Northbound, then the Southbound StatefulSet;
//   - publishes both databases' addresses, all at once or none;
//   - then runs northd, the relay and the backup CronJob side by side.
//
// docs/design/ovn.md is the contract of what runs in the pods.
package ovncentral

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
)

// Requeue intervals. Raft members and addresses settle in seconds, and
// their watches usually bring the next pass first.
const (
	// RequeueRaftWait polls members joining and addresses appearing.
	RequeueRaftWait = 15 * time.Second
	// RequeueSecretPolling polls cert-manager and a held target cluster.
	RequeueSecretPolling = 15 * time.Second
	// RequeueDeploymentPolling polls a rolling Deployment.
	RequeueDeploymentPolling = 10 * time.Second
)

// childKinds are what a central writes onto its children's cluster; a
// placed central's teardown sweeps them. Secrets are not among them: the
// certificate Secrets are cert-manager's, and each carries an
// ownerReference to its Certificate (secrets.go), so the cluster's garbage
// collector deletes it once the sweep has deleted the Certificate.
// Database claims go with their StatefulSet's retention policy.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "PersistentVolumeClaim"},
	{Group: "batch", Version: "v1", Kind: "CronJob"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
}

// Reconciler reconciles OVNCentral objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// APIReader reads the management cluster without a cache: Services
	// and pods, which the Endpoints step must see as they are now, and
	// which the operator does not cache.
	APIReader client.Reader
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry resolves targetClusterRef; nil turns placed centrals off.
	Registry *targetcluster.Registry
	// Teardown removes a placed central's children on deletion.
	Teardown *placement.Teardown
	// Recorder records the events of condition transitions.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovncentrals,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovncentrals/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovncentrals/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers,verbs=get;list;watch;create;patch;delete

// pass is what one pass over a central builds up, step by step.
type pass struct {
	central *ovnv1alpha1.OVNCentral
	// children is where the children live. Set by Cluster.
	children *childwriter.Writer
	// live reads the children's cluster without a cache. Set by Cluster.
	live client.Reader
	// scriptsHash is the hash of the scripts ConfigMap. Set by Scripts.
	scriptsHash string
}

// steps are the pass's steps in order, each with the condition it owns.
// The last four report side by side: none of them waits for another, so
// each returns a requeue instead of stopping the pass.
func (r *Reconciler) steps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: ovnv1alpha1.TLSReadyCondition, Run: r.place},
		{Condition: ovnv1alpha1.TLSReadyCondition, Run: r.reconcileTLS},
		{Condition: ovnv1alpha1.NorthboundReadyCondition, Run: r.reconcileScripts},
		{Condition: ovnv1alpha1.NorthboundReadyCondition, Run: r.reconcileNorthbound},
		{Condition: ovnv1alpha1.SouthboundReadyCondition, Run: r.reconcileSouthbound},
		{Condition: ovnv1alpha1.EndpointsReadyCondition, Run: r.reconcileEndpoints},
		{Condition: ovnv1alpha1.NorthdReadyCondition, Run: r.reconcileNorthd},
		{Condition: ovnv1alpha1.RelayReadyCondition, Run: r.reconcileRelay},
		{Condition: ovnv1alpha1.BackupReadyCondition, Run: r.reconcileBackup},
		{Condition: ovnv1alpha1.VPAReadyCondition, Run: r.reconcileVPA},
	}
}

// Reconcile brings one central up to date: get, defer the status patch,
// take the deletion branch, then run the steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	central := &ovnv1alpha1.OVNCentral{}
	if err := r.Client.Get(ctx, req.NamespacedName, central); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := central.DeepCopy()
	p := &pass{central: central}
	var passErr error
	defer func() {
		flow.JoinPatchError(&res, &retErr, r.patchStatus(ctx, before, central, passErr))
	}()

	if !central.DeletionTimestamp.IsZero() {
		return r.placement().Release(ctx, central, conditionsOf(central))
	}
	var out flow.Outcome
	out, passErr = flow.Run(ctx, conditionsOf(central), p, r.steps())
	return flow.Result(out, passErr)
}

// placement is the central's part of the placement protocol: the
// condition that reports an unusable cluster, how soon it looks again, and
// the kinds of its children.
func (r *Reconciler) placement() placement.Protocol {
	return placement.Protocol{Client: r.Client, Scheme: r.Scheme, APIReader: r.APIReader, Registry: r.Registry, Teardown: r.Teardown,
		Condition: ovnv1alpha1.TLSReadyCondition, Poll: RequeueSecretPolling, Kinds: childKinds}
}

// place resolves where the children live and, for a placed central,
// holds it with the remote-children finalizer before anything is written
// there; a cluster that cannot be used stops the pass.
func (r *Reconciler) place(ctx context.Context, p *pass) (flow.Outcome, error) {
	at, err := placement.Resolve(ctx, r.placement(), p.central)
	if err != nil {
		return flow.Continue, err
	}
	p.children, p.live = at.Children, at.Live
	return flow.Continue, nil
}

// patchStatus ends every pass: the shared rollup derives Ready, records
// the transition events and writes what changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, c *ovnv1alpha1.OVNCentral, passErr error) error {
	return conditions.PatchStatus(ctx, r.Client, r.Recorder, before, c, &before.Status.CommonStatus, &c.Status.CommonStatus, passErr, r.summary())
}

// summary is how a central's Ready is derived and its events recorded.
func (r *Reconciler) summary() conditions.Summary {
	return conditions.Summary{
		Steps:        flow.StepConditions(r.steps()),
		ReadyMessage: "both databases, northd and the backups run, and the addresses are published",
		Events:       transitionEvents,
	}
}
