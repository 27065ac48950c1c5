package targetcluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/anvil/anvil/internal/childwriter"
)

// Defaults for Options.
const (
	DefaultSyncTimeout   = 2 * time.Minute
	DefaultProbeInterval = 5 * time.Second
	DefaultProbeTimeout  = 3 * time.Second
)

// Event reasons the registry records on registration Secrets.
const (
	// ReasonRegistrationRefused is a Warning: the Secret is not usable, and
	// the message says why without quoting it.
	ReasonRegistrationRefused = "RegistrationRefused"
	// ReasonClusterEngaged is Normal: a client and cache run for the cluster.
	ReasonClusterEngaged = "ClusterEngaged"
)

// Options configure a Registry.
type Options struct {
	// Namespace holds the registration Secrets. Empty turns compute
	// clusters off: every name is then unavailable.
	Namespace string
	// Scheme is given to every compute cluster's client and cache.
	Scheme *runtime.Scheme
	// SyncTimeout bounds how long an engagement waits for the first cache
	// sync before it fails and is retried with backoff.
	SyncTimeout time.Duration
	// ProbeInterval is how often an engaged cluster's readiness is checked.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one readiness check.
	ProbeTimeout time.Duration
	// AcknowledgementPoll is how often a registration refused for its
	// endpoint is looked at again: the acknowledgement is written to the
	// clusters Namespace, which the registry does not watch. Zero means
	// DefaultAcknowledgementPoll.
	AcknowledgementPoll time.Duration
	// AllowClusterWide engages a registration without a namespaces key,
	// with a cluster-wide cache. Off, such a registration is refused
	// (RefusedClusterWide).
	AllowClusterWide bool
}

// Registry turns registration Secrets into clients for compute clusters. It
// is the only place in the operator that builds such clients; reconcilers
// reach compute clusters through Resolve and the sources it hands out.
type Registry struct {
	opts     Options
	mgmt     client.Client
	recorder events.EventRecorder
	log      logr.Logger

	// started is closed once the manager has given the registry its
	// long-lived context; clusters run under it, not under one reconcile.
	started chan struct{}
	rootCtx context.Context

	mu          sync.RWMutex
	clusters    map[string]*engagement
	pending     map[string]string
	watches     []*remoteWatch
	subscribers []*subscriber
	// refused holds, per cluster name, the hash of the registration whose
	// endpoint change was refused and reported, so that the passes polling
	// for an acknowledgement do not report it again.
	refused map[string]string
	// pins holds, per cluster name, the endpoint fingerprint of its last
	// engagement, on the clusters Namespace. It outlives disengagement,
	// the Secret itself and the process, so that neither unlabelling,
	// re-creating a registration nor waiting for a restart lets a new
	// server in unacknowledged.
	pins *pinStore
}

// engagement is one running compute cluster.
type engagement struct {
	name       string
	hash       string
	namespaces []string
	cluster    cluster.Cluster
	// client writes only inside namespaces; see newScopedClient.
	client   client.Client
	probe    *http.Client
	probeURL string
	cancel   context.CancelFunc
	healthy  atomic.Bool
}

// New returns a Registry that reads registrations through the manager's
// client. Call SetupWithManager to start it.
func New(mgr ctrl.Manager, opts Options) *Registry {
	if opts.Scheme == nil {
		opts.Scheme = mgr.GetScheme()
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ProbeTimeout == 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.AcknowledgementPoll == 0 {
		opts.AcknowledgementPoll = DefaultAcknowledgementPoll
	}
	return &Registry{
		opts:     opts,
		mgmt:     mgr.GetClient(),
		recorder: mgr.GetEventRecorder("targetcluster-registry"),
		log:      mgr.GetLogger().WithName("targetcluster"),
		started:  make(chan struct{}),
		clusters: map[string]*engagement{},
		pending:  map[string]string{},
		refused:  map[string]string{},
		pins:     &pinStore{reader: mgr.GetAPIReader(), writer: mgr.GetClient(), namespace: opts.Namespace},
	}
}

// SetupWithManager adds the registry and its Secret controller to mgr. With
// an empty namespace only the registry is added, and every name resolves to
// an UnavailableError.
func (r *Registry) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(r); err != nil {
		return err
	}
	if r.opts.Namespace == "" {
		return nil
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.opts.Namespace
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("targetcluster-registry").
		For(&corev1.Secret{}, builder.WithPredicates(inNamespace)).
		WithOptions(controller.Options{
			// Engaging waits for a cache sync; several workers keep one slow
			// cluster from delaying the registration of the others.
			MaxConcurrentReconciles: 4,
			// A failed engagement is retried soon, but never more often than
			// once a second, and at least every minute.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute),
		}).
		Complete(r)
}

// Start records the manager's context and keeps the engaged clusters running
// until it ends. It implements manager.Runnable.
func (r *Registry) Start(ctx context.Context) error {
	r.rootCtx = ctx
	close(r.started)
	<-ctx.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, e := range r.clusters {
		e.cancel()
		delete(r.clusters, name)
	}
	r.updateGauges()
	// A stopped registry reaches no cluster: its per-cluster series go, so
	// that a registry started later in the same process starts clean.
	clusterReachable.Reset()
	return nil
}

// Reconcile engages, re-engages or disengages the cluster of one
// registration Secret.
func (r *Registry) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	select {
	case <-r.started:
	case <-ctx.Done():
		return ctrl.Result{}, ctx.Err()
	}
	log := r.log.WithValues("secret", req.String(), "cluster", req.Name)
	secret := &corev1.Secret{}
	if err := r.mgmt.Get(ctx, req.NamespacedName, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.disengage(req.Name, notRegisteredReason)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading registration Secret %s: %w", req.NamespacedName, err)
	}
	if !secret.DeletionTimestamp.IsZero() || secret.Labels[RegistrationLabel] != "true" {
		r.disengage(req.Name, notRegisteredReason)
		return ctrl.Result{}, nil
	}

	reg, err := ParseRegistration(secret)
	if err == nil {
		err = CheckRegistrationScope(reg, r.opts.AllowClusterWide)
	}
	if err != nil {
		refusal, _ := IsRefusal(err)
		reason := string(RefusedInvalidKubeconfig)
		if refusal != nil {
			reason = string(refusal.Reason)
		}
		refusalsTotal.WithLabelValues(reason).Inc()
		log.Info("refusing the registration Secret", "reason", reason, "detail", err.Error())
		r.recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonRegistrationRefused, "Register",
			"Anvil does not use this registration: %s", err.Error())
		r.disengage(req.Name, "its registration Secret was refused ("+err.Error()+")")
		// Only an edit of the Secret can fix it, and that triggers a new pass.
		return ctrl.Result{}, nil
	}

	if cur := r.engaged(req.Name); cur != nil && cur.hash == reg.Hash {
		return ctrl.Result{}, nil
	}
	return r.engageRegistration(ctx, log, secret, req.Name, reg)
}

// engage builds, starts and syncs a cluster. On any failure it stops what it
// started, so a failed attempt leaves nothing running.
func (r *Registry) engage(name string, reg *Registration) (_ *engagement, err error) {
	cfg, err := clientcmd.NewDefaultClientConfig(*reg.Kubeconfig, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig cannot be used: %s", sanitize(err))
	}
	// Children are written in bursts (one per object of a kind); the
	// client-side limiter should not be what slows a pass down.
	cfg.QPS, cfg.Burst = 50, 100
	// The operator names itself in the compute cluster's audit trail.
	cfg.UserAgent = "anvil-operator"
	cacheOpts := cacheOptions(reg.Namespaces)
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = r.opts.Scheme
		o.Cache = cacheOpts
		o.Logger = r.log.WithValues("cluster", name)
	})
	if err != nil {
		return nil, fmt.Errorf("building the client: %s", sanitize(err))
	}
	probe, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the probe client: %s", sanitize(err))
	}
	probe.Timeout = r.opts.ProbeTimeout

	ctx, cancel := context.WithCancel(r.rootCtx)
	e := &engagement{
		name: name, hash: reg.Hash, namespaces: reg.Namespaces, cluster: cl,
		client: newScopedClient(cl.GetClient(), name, reg.Namespaces),
		probe:  probe, probeURL: strings.TrimSuffix(cfg.Host, "/") + "/readyz", cancel: cancel,
	}
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	go func() {
		if err := cl.Start(ctx); err != nil {
			r.log.Info("cluster stopped with an error", "cluster", name, "error", sanitize(err))
		}
	}()

	syncCtx, syncCancel := context.WithTimeout(ctx, r.opts.SyncTimeout)
	defer syncCancel()
	if err := e.check(syncCtx); err != nil {
		return nil, err
	}
	r.mu.RLock()
	watches := append([]*remoteWatch(nil), r.watches...)
	r.mu.RUnlock()
	for _, w := range watches {
		if err := r.attach(syncCtx, e, w); err != nil {
			return nil, err
		}
	}
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("the cache did not sync within %s", r.opts.SyncTimeout)
	}
	e.healthy.Store(true)
	go r.probeLoop(ctx, e)
	return e, nil
}

// check asks the cluster's readiness endpoint once.
func (e *engagement) check(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.probeURL, nil)
	if err != nil {
		return fmt.Errorf("building the readiness probe: %s", sanitize(err))
	}
	resp, err := e.probe.Do(req)
	if err != nil {
		return fmt.Errorf("the apiserver does not answer: %s", sanitize(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the apiserver's readiness probe answered %d", resp.StatusCode)
	}
	return nil
}

// probeLoop marks the cluster unreachable or reachable as its readiness
// changes, and tells every dependent object, through the flap gate.
func (r *Registry) probeLoop(ctx context.Context, e *engagement) {
	t := time.NewTicker(r.opts.ProbeInterval)
	defer t.Stop()
	gate := newFlapGate(flapBurst, flapRefill)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := e.check(ctx)
		if ctx.Err() != nil {
			return
		}
		healthy := err == nil
		changed := e.healthy.Swap(healthy) != healthy
		if changed {
			if healthy {
				r.log.Info("the cluster is reachable again", "cluster", e.name)
			} else {
				r.log.Info("the cluster is unreachable", "cluster", e.name, "reason", err.Error())
			}
			r.mu.Lock()
			r.updateGauges()
			r.mu.Unlock()
		}
		if gate.Observe(time.Now(), changed) {
			r.notify(e.name)
		}
	}
}

// swap makes e the engagement of its cluster and stops the one it replaces.
func (r *Registry) swap(e *engagement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.clusters[e.name]; old != nil {
		old.cancel()
	}
	r.clusters[e.name] = e
	delete(r.pending, e.name)
	r.updateGauges()
}

// disengage stops a cluster's client and cache, if any, and remembers why
// the name no longer resolves.
func (r *Registry) disengage(name, reason string) {
	r.mu.Lock()
	e := r.clusters[name]
	delete(r.clusters, name)
	r.pending[name] = reason
	if reason == notRegisteredReason {
		// The name is no compute cluster any more; a 0 would page for it.
		clusterReachable.DeleteLabelValues(name)
	}
	r.updateGauges()
	r.mu.Unlock()
	if e != nil {
		e.cancel()
		r.log.Info("disengaged the cluster", "cluster", name, "reason", reason)
		r.notify(name)
	}
}

func (r *Registry) setPending(name, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clusters[name] == nil {
		r.pending[name] = reason
		r.updateGauges()
	}
}

func (r *Registry) engaged(name string) *engagement {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.clusters[name]
}

// updateGauges sets the gauges from the current maps; r.mu must be held.
// A registered cluster the operator cannot use (its engagement failed, or
// its registration or endpoint was refused) reads 0 in the per-cluster
// gauge, like an engaged one whose readiness probe fails: either way the
// operator does not reach it.
func (r *Registry) updateGauges() {
	unreachable := 0
	for name, e := range r.clusters {
		healthy := e.healthy.Load()
		if !healthy {
			unreachable++
		}
		clusterReachable.WithLabelValues(name).Set(boolValue(healthy))
	}
	for name, reason := range r.pending {
		if r.clusters[name] == nil && reason != notRegisteredReason {
			clusterReachable.WithLabelValues(name).Set(0)
		}
	}
	clustersEngaged.Set(float64(len(r.clusters)))
	clustersUnreachable.Set(float64(unreachable))
}

// Remote is a compute cluster as a reconciler sees it.
type Remote struct {
	// Name is the cluster's name.
	Name string
	// Client reads from the cluster's cache and writes to its apiserver.
	// Under a scoped registration it refuses, with a
	// *childwriter.NamespaceNotAllowedError, every write to a namespace
	// the scope does not list, whichever path makes it.
	Client client.Client
	// Reader reads from the apiserver directly. Ownership checks and sweeps
	// use it, so they never act on a stale cache.
	Reader client.Reader
	// Namespaces is the registration's scope; empty means cluster-wide.
	Namespaces []string
	// Scheme is the one every compute cluster's client uses.
	Scheme *runtime.Scheme
}

// Allows tells whether the registration lets Anvil work in namespace.
func (r *Remote) Allows(namespace string) bool {
	return len(r.Namespaces) == 0 || slices.Contains(r.Namespaces, namespace)
}

// Writer places children on this compute cluster.
func (r *Remote) Writer() *childwriter.Writer {
	return &childwriter.Writer{Client: r.Client, Reader: r.Reader, Scheme: r.Scheme, Cluster: r.Name, Namespaces: r.Namespaces}
}

// WriterFor returns where the children of an object whose
// targetClusterRef names cluster live: local for "", else the resolved
// compute cluster. It returns the *UnavailableError to report when that
// cluster cannot be used, also on a nil Registry, which means the operator
// runs without compute clusters.
func (r *Registry) WriterFor(cluster string, local *childwriter.Writer) (*childwriter.Writer, error) {
	if cluster == "" {
		return local, nil
	}
	if r == nil {
		return nil, &UnavailableError{Cluster: cluster, Reason: "this operator runs without compute clusters"}
	}
	remote, err := r.Resolve(cluster)
	if err != nil {
		return nil, err
	}
	return remote.Writer(), nil
}

// Resolve returns the named compute cluster, or an *UnavailableError saying
// why it cannot be used. It never blocks on the network.
func (r *Registry) Resolve(name string) (*Remote, error) {
	if r.opts.Namespace == "" {
		return nil, &UnavailableError{Cluster: name, Reason: "compute clusters are disabled (the operator runs with an empty --clusters-namespace)"}
	}
	r.mu.RLock()
	e, pending := r.clusters[name], r.pending[name]
	r.mu.RUnlock()
	if e == nil {
		if pending == "" {
			pending = notRegisteredReason
		}
		return nil, &UnavailableError{Cluster: name, Reason: pending}
	}
	if !e.healthy.Load() {
		// The probe's cause is in the log, never in a condition; see
		// UnreachableReason.
		return nil, &UnavailableError{Cluster: name, Reason: UnreachableReason}
	}
	return &Remote{Name: name, Client: e.client, Reader: e.cluster.GetAPIReader(), Namespaces: e.namespaces, Scheme: r.opts.Scheme}, nil
}

// Registered returns the names of the clusters whose registration Secrets
// exist, labelled and not being deleted, and may hold objects of
// namespace: they list it, list no namespaces, or cannot be read. It reads
// the Secrets, not what is engaged, so that a caller that must reach every
// such cluster (a teardown) also sees one the registry has not engaged yet,
// right after a restart, or cannot engage at all. The names are sorted.
func (r *Registry) Registered(ctx context.Context, namespace string) ([]string, error) {
	if r == nil || r.opts.Namespace == "" {
		return nil, nil
	}
	list := &corev1.SecretList{}
	if err := r.mgmt.List(ctx, list, client.InNamespace(r.opts.Namespace), client.MatchingLabels{RegistrationLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing the registration Secrets: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		if s.DeletionTimestamp.IsZero() && mayHold(s, namespace) {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// mayHold tells whether the cluster a registration Secret names may hold
// objects of namespace. A list that cannot be parsed counts as yes: the
// caller then waits rather than skips.
func mayHold(s *corev1.Secret, namespace string) bool {
	raw, scoped := s.Data[NamespacesKey]
	if !scoped {
		return true
	}
	namespaces, err := ParseNamespaces(string(raw))
	return err != nil || slices.Contains(namespaces, namespace)
}

// Clusters returns the names of the engaged clusters.
func (r *Registry) Clusters() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.clusters))
	for n := range r.clusters {
		names = append(names, n)
	}
	return names
}
