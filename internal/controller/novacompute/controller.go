package novacompute

import (
	"cmp"
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/anvil/anvil/internal/openstack"
	"github.com/anvil/anvil/internal/targetcluster"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// Requeue intervals of a pass. The Services step asks for the shortest any
// node needs.
const (
	// DefaultResync is how often a settled pool polls Nova, which cannot be
	// watched.
	DefaultResync   = 60 * time.Second
	nodeWaitRequeue = 30 * time.Second
	// registrationPoll is how often a node whose nova-compute just started
	// is asked about, for registrationWindow after the start, so that its
	// service is seen within seconds of registering.
	registrationPoll   = 3 * time.Second
	registrationWindow = 2 * time.Minute
	inputRequeue       = 15 * time.Second
	shortRequeue       = 10 * time.Second
	apiErrorRequeue    = 30 * time.Second
)

// childKinds are the kinds a pool writes onto its cluster; a placed pool's
// teardown sweeps them by ownership label.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "batch", Version: "v1", Kind: "Job"},
}

// Cloud is the part of the OpenStack APIs a pool calls.
type Cloud interface {
	openstack.ComputeServices
	openstack.Hypervisors
	openstack.Aggregates
	openstack.Servers
	openstack.Placement
}

// CloudFactory authenticates once and returns a Cloud for one pass.
type CloudFactory func(ctx context.Context, creds openstack.Credentials) (Cloud, error)

// NewSessionCloud is a CloudFactory that authenticates on every call.
func NewSessionCloud(ctx context.Context, creds openstack.Credentials) (Cloud, error) {
	return openstack.NewSession(ctx, creds)
}

// CachedSessionCloud is the CloudFactory of production: sessions from
// cache, so that a settled pool's passes reuse one token until it nears
// expiry instead of asking Keystone for a new one every pass.
func CachedSessionCloud(cache *openstack.SessionCache) CloudFactory {
	return func(ctx context.Context, creds openstack.Credentials) (Cloud, error) {
		s, err := cache.Session(ctx, creds)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// Reconciler reconciles NovaCompute objects.
type Reconciler struct {
	// Client reads and writes the management cluster through its cache.
	Client client.Client
	// APIReader reads the management cluster directly: Nodes, and the
	// ownership checks of local children.
	APIReader client.Reader
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry resolves targetClusterRef.
	Registry *targetcluster.Registry
	// Teardown sweeps a placed pool's children on deletion.
	Teardown *placement.Teardown
	// Recorder records the pool's events.
	Recorder events.EventRecorder
	// Cloud opens the OpenStack session of a pass; nil means a
	// CachedSessionCloud of its own.
	Cloud CloudFactory
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Resync is how often a settled pool polls Nova; zero means
	// DefaultResync.
	Resync time.Duration
	// Policy is what a pool may run; the zero value is the default policy.
	Policy workloadpolicy.Policy
	// Keystone limits the hosts the pool authenticates at with its Nova's
	// service password; the zero value admits only an owning
	// ControlPlane's Keystone.
	Keystone keystonepolicy.Policy
	// CellDB opens the Nova's cell database, which the pool reads the
	// failed_builds counters from; nil means OpenCellDB.
	CellDB CellDBFactory
	// Workers is how many pools' passes run at once; zero means
	// DefaultWorkers.
	Workers int

	onboarding onboardingTracker
	traits     traitWrites
	// claims and perNova keep concurrent passes from deciding on each
	// other's stale state; see concurrency.go.
	claims  claims
	perNova keyedMutex
	// listings share a Nova's listings between the passes that run at
	// once; see sharedlisting.go.
	listings novaListings
}

// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novacomputes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novacomputes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novacomputes/finalizers,verbs=update
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=kvm.cloud.sap,resources=hypervisors,verbs=get;list;watch;patch

// Reconcile runs one pass over a pool. It reads like a table of contents:
// get the pool, defer the one status patch, take the deletion branch, add
// the drain finalizer, then run the steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	pool := &novav1alpha1.NovaCompute{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			r.claims.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := pool.DeepCopy()
	var passErr error
	defer func() {
		r.claims.settle(pool)
		flow.JoinPatchError(&res, &retErr, r.patchStatus(ctx, before, pool, passErr))
	}()

	p := &pass{r: r, pool: pool, deleting: !pool.DeletionTimestamp.IsZero(), started: time.Now()}
	if p.deleting {
		var res ctrl.Result
		res, passErr = r.drainThenRelease(ctx, p)
		return res, passErr
	}
	// The drain finalizer comes first, before the pass can hold a node;
	// the remote-children finalizer is the placement protocol's, in
	// NovaRef.
	if passErr = flow.AddFinalizer(ctx, r.Client, pool, novav1alpha1.ComputeDrainFinalizer); passErr != nil {
		return ctrl.Result{}, passErr
	}
	var out flow.Outcome
	out, passErr = flow.Run(ctx, conditionsOf(pool), p, r.steps())
	return flow.Result(out, passErr)
}

// steps are the pass's steps in order, each with the condition it owns:
// each needs what the earlier ones produced.
func (r *Reconciler) steps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: novav1alpha1.NovaReadyCondition, Run: timed("Policy", r.reconcilePolicy)},
		{Condition: novav1alpha1.NovaReadyCondition, Run: timed("NovaRef", r.reconcileNovaRef)},
		{Condition: novav1alpha1.NodesReadyCondition, Run: timed("Nodes", r.reconcileNodes)},
		{Condition: novav1alpha1.ConfigReadyCondition, Run: timed("PoolConfig", r.reconcilePoolConfig)},
		{Condition: novav1alpha1.PreflightReadyCondition, Run: timed("Preflight", r.reconcilePreflight)},
		{Condition: novav1alpha1.DaemonSetReadyCondition, Run: timed("DaemonSet", r.reconcileDaemonSet)},
		{Condition: novav1alpha1.AggregatesReadyCondition, Run: timed("Aggregates", r.reconcileAggregates)},
		{Condition: novav1alpha1.ServicesReadyCondition, Run: timed("Services", r.reconcileServices)},
		// A diagnostic under ServicesReady that never fails the pass, so
		// it never sets the condition either.
		{Condition: novav1alpha1.ServicesReadyCondition, Run: timed("FailedBuilds", r.reconcileFailedBuilds)},
		// A measurement under ServicesReady that never fails the pass
		// either: when each new node first becomes schedulable.
		{Condition: novav1alpha1.ServicesReadyCondition, Run: timed("Schedulable", r.reconcileSchedulable)},
		{Condition: novav1alpha1.TraitsReadyCondition, Run: timed("Traits", r.reconcileTraits)},
	}
}

// patchStatus ends every pass: the shared rollup derives Ready and writes
// what changed, and the node gauge follows the status.
func (r *Reconciler) patchStatus(ctx context.Context, before, pool *novav1alpha1.NovaCompute, passErr error) error {
	start := time.Now()
	defer func() { stepSeconds.WithLabelValues("StatusPatch").Observe(time.Since(start).Seconds()) }()
	err := conditions.PatchStatus(ctx, r.Client, r.Recorder, before, pool, &before.Status.CommonStatus, &pool.Status.CommonStatus, passErr, r.summary())
	observeNodePhases(pool)
	observeFailedBuilds(before, pool)
	return err
}

// summary is how a pool's Ready is derived. ExtraConfigHealthy is
// reported but never holds a pool back, so it is no step's condition.
// The pool records its events where they happen, about the node or
// aggregate concerned.
func (r *Reconciler) summary() conditions.Summary {
	return conditions.Summary{Steps: flow.StepConditions(r.steps()), ReadyMessage: "every node of the pool is a Nova host"}
}

// placement is the pool's part of the placement protocol: the condition
// that reports an unusable cluster, how soon it looks again, and the kinds
// of its children.
func (r *Reconciler) placement() placement.Protocol {
	return placement.Protocol{Client: r.Client, Scheme: r.Scheme, APIReader: r.APIReader, Registry: r.Registry, Teardown: r.Teardown,
		Condition: novav1alpha1.NovaReadyCondition, Poll: inputRequeue, Kinds: childKinds}
}

// local is the management cluster as a pool's children see it: reads go
// to the apiserver, so node and ownership decisions never act on a stale
// cache.
func (r *Reconciler) local() *childwriter.Writer {
	c := childwriter.Local(r.Client, r.Scheme)
	c.Reader = r.APIReader
	return c
}

// workers returns how many passes run at once.
func (r *Reconciler) workers() int { return cmp.Or(max(r.Workers, 0), DefaultWorkers) }

// resync returns how often a settled pool polls Nova.
func (r *Reconciler) resync() time.Duration { return cmp.Or(r.Resync, DefaultResync) }

// now returns the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// event records a pool event about related, which may be nil; messages
// never carry a credential. The events API folds events of the same reason,
// action and related object into one series that keeps the first message,
// so an event about one of several nodes or aggregates names it as related.
func (r *Reconciler) event(pool *novav1alpha1.NovaCompute, related *corev1.ObjectReference, warning bool, reason, action, format string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	var rel runtime.Object
	if related != nil {
		rel = related
	}
	r.Recorder.Eventf(pool, rel, typ, reason, action, format, args...)
}

// nodeRef is the related object of an event about a node of the pool's
// cluster.
func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name}
}

// aggregateRef is the related object of an event about a Nova host
// aggregate; it names an OpenStack object, not a Kubernetes one.
func aggregateRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "compute.openstack.org/v2.1", Kind: "Aggregate", Name: name}
}
