// Package controlplane reconciles ControlPlane objects. It projects the
// Nova child {cp}-nova, hands it the bus (and the external bus for remote
// computes), registers its API in the Keystone catalog, and mirrors that
// Nova's compute contract onto every compute cluster that hosts one of its
// pools.
package controlplane

import (
	"context"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/openstack"
	"github.com/anvil/anvil/internal/targetcluster"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// waitRequeue is the poll interval of the ControlPlane's waits.
const waitRequeue = 15 * time.Second

// Reconciler reconciles ControlPlane objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry reaches the compute clusters that receive mirrors; nil
	// means no compute clusters, so no mirrors.
	Registry *targetcluster.Registry
	// Recorder records the events of condition transitions.
	Recorder events.EventRecorder
	// Keystone logs in with admin credentials for the accounts and the
	// catalog Anvil manages; nil means a CachedKeystone of its own.
	Keystone KeystoneFactory
	// APIReader reads Namespaces past the cache, which holds none; nil
	// means the manager's.
	APIReader client.Reader
	// PoolPolicy is the pool controller's policy: a pool it refuses earns
	// its cluster no contract.
	PoolPolicy workloadpolicy.Policy
	// KeystonePolicy is the operator's --allowed-keystone-hosts, which the
	// ControlPlane's Keystone must obey before a pass sends it anything.
	KeystonePolicy keystonepolicy.Policy

	// refusedAhead holds, by ControlPlane, the generation whose Nova apply
	// was refused after the mirrors had been written ahead of it, so that
	// a pass whose status patch lost a race does not write it ahead again.
	refusedAhead sync.Map
}

// KeystoneFactory returns an admin session for account and catalog work.
type KeystoneFactory func(ctx context.Context, admin openstack.Credentials) (AdminSession, error)

// NewKeystone is a KeystoneFactory that authenticates on every call: a
// gophercloud session that talks to Keystone at the admin credentials'
// auth URL.
func NewKeystone(ctx context.Context, admin openstack.Credentials) (AdminSession, error) {
	return openstack.NewIdentitySession(ctx, admin)
}

// CachedKeystone is the KeystoneFactory of production: NewKeystone's
// sessions, reused across passes until their token nears expiry.
func CachedKeystone(cache *openstack.SessionCache) KeystoneFactory {
	return func(ctx context.Context, admin openstack.Credentials) (AdminSession, error) {
		s, err := cache.IdentitySession(ctx, admin)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes/finalizers,verbs=update
// +kubebuilder:rbac:groups=neutron.openstack.c5c3.io,resources=neutronmetadataagents,verbs=get;list;watch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novacomputes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete

// pass is what one pass over a ControlPlane builds up, step by step.
type pass struct {
	cp *c5c3v1alpha1.ControlPlane
	// nova is the projected Nova, Ready for its generation or rolling; nil
	// while services.nova is unset or the Nova is being installed. Set by
	// Nova.
	nova *novav1alpha1.Nova
	// novaRolling is set when the Nova is not Ready for its generation but
	// has published a contract before (NovaRolling): the contract is
	// delivered, while the catalog, the hypervisor operator's account, the
	// release of its inputs and NovaReady wait for the rollout. Set by Nova.
	novaRolling bool
	// delivered is the data of the Nova's input Secrets this pass wrote,
	// by name, which the mirror step renders from. Set by Nova.
	delivered map[string]map[string][]byte
	// hvoAuth is the data of the hypervisor operator's auth Secret, which
	// the delivery step copies; nil while the account is not asked for.
	hvoAuth map[string][]byte
	// hvoDomainID and hvoProjectID are where the shared account lives, so
	// that each cluster's own user joins it without looking them up again.
	// Set by HypervisorOperator with hvoAuth.
	hvoDomainID, hvoProjectID string
	// inputWrites are the input Secrets being written beside the pass
	// (deliverInput); awaitNova joins them. Set by Nova.
	inputWrites []chan error
	// projection is the Nova apply running while the mirrors are written,
	// novaBefore the Nova as it was, and mirrorContract the contract the
	// mirror step rendered; awaitNova joins them. Set by Nova and Mirrors.
	projection     chan projection
	novaBefore     *novav1alpha1.Nova
	mirrorContract map[string][]byte
	// targets are the compute clusters of the Nova's pools, and pools the
	// pools in its namespace. Set by Mirrors.
	targets []string
	pools   []novav1alpha1.NovaCompute
	// withheld are the pools that get no contract, which NovaReady names.
	// Set by Mirrors.
	withheld []Withheld
	// mirrorHashes holds the contract hash written to each target this
	// pass; failures the targets that were not served. Set by Mirrors.
	mirrorHashes map[string]string
	failures     []clusterResult
	// authWithheld are the target clusters whose namespace does not ask
	// for the hypervisor operator's auth Secret. Set by Mirrors.
	authWithheld []string
	// wanted are the copies this pass delivers, or means to and could
	// not; withdrawDeliveries deletes the inventory's others. Set by
	// Mirrors and MetadataAgentSecrets.
	wanted map[copyKey]bool
	// keystone is the pass's admin session, opened on first use, and
	// adminDomain the admin's domain, where accounts are created.
	keystone    AdminSession
	adminDomain string
	// compute is what the clusters' own nova-compute users need from
	// Keystone, read on the first such user of the pass.
	compute *computeAccess
	// catalogHeld is set when this pass left a compute service of this
	// ControlPlane in the catalog, which the accounts finalizer guards.
	catalogHeld bool
	// namespace is the read of the namespace's opt-in, started with the
	// pass; nil when the pass judges no pools.
	namespace *namespaceRead
}

// steps are the pass's steps in order, each with the condition it owns.
func (r *Reconciler) steps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.checkKeystone},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reconcileNova},
		{Condition: c5c3v1alpha1.ComputeCatalogReadyCondition, Run: r.reconcileCatalog},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reconcileHypervisorOperator},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reconcileMirrors},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.awaitNova},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.pruneClusterCredentials},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reconcileMetadataAgentSecrets},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.withdrawDeliveries},
		{Condition: c5c3v1alpha1.ComputeRotationCompleteCondition, Run: r.reconcileRotation},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reportDeliveries},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.releaseAccountsFinalizer},
		{Condition: c5c3v1alpha1.OVNReadyCondition, Run: r.reconcileOVN},
	}
}

// teardownSteps run while a ControlPlane is deleted: only what it wrote to
// Keystone, the catalog and the accounts, and the copies it delivered to
// compute clusters, hold a finalizer, because every other child is local
// and carries a controller reference. The catalog goes first, so that
// clients stop finding a Nova that is going away; the copies go last,
// since an unreachable cluster makes that step wait.
func (r *Reconciler) teardownSteps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.checkKeystone},
		{Condition: c5c3v1alpha1.ComputeCatalogReadyCondition, Run: r.reconcileCatalog},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reconcileHypervisorOperator},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.pruneClusterCredentials},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.releaseAccountsFinalizer},
		{Condition: c5c3v1alpha1.NovaReadyCondition, Run: r.reapDeliveries},
	}
}

// Reconcile brings one ControlPlane up to date: get it, defer the status
// patch, take down the Keystone accounts of a deleted one, else run the
// steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	cp := &c5c3v1alpha1.ControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, cp); err != nil {
		if apierrors.IsNotFound(err) {
			r.refusedAhead.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := cp.DeepCopy()
	var passErr error
	defer func() {
		flow.JoinPatchError(&res, &retErr, r.patchStatus(ctx, before, cp, passErr))
	}()
	steps := r.steps()
	if !cp.DeletionTimestamp.IsZero() {
		steps = r.teardownSteps()
	}
	p := &pass{cp: cp, namespace: r.readNamespaceAhead(ctx, cp)}
	defer p.drainWrites()
	var out flow.Outcome
	out, passErr = flow.Run(ctx, conditionsOf(cp), p, steps)
	return flow.Result(out, passErr)
}

// patchStatus ends every pass: the shared rollup derives Ready, records
// the transition events and writes what changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, cp *c5c3v1alpha1.ControlPlane, passErr error) error {
	return conditions.PatchStatus(ctx, r.Client, r.Recorder, before, cp, &before.Status.CommonStatus, &cp.Status.CommonStatus, passErr, r.summary())
}

// summary is how a ControlPlane's Ready is derived and its events recorded.
func (r *Reconciler) summary() conditions.Summary {
	// A rotation in progress does not make the cloud unready: an OnDelete
	// pool follows only when its pods are deleted, which may take days.
	steps := slices.DeleteFunc(flow.StepConditions(r.steps()), func(c string) bool {
		return c == c5c3v1alpha1.ComputeRotationCompleteCondition
	})
	return conditions.Summary{Steps: steps, ReadyMessage: "every service is ready", Events: transitionEvents}
}
