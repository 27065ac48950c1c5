package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/controlplane"
	"github.com/anvil/anvil/internal/controller/neutronmetadataagent"
	"github.com/anvil/anvil/internal/controller/nova"
	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/controller/ovncentral"
	"github.com/anvil/anvil/internal/controller/ovnchassis"
	"github.com/anvil/anvil/internal/operator/webhookcerts"
	"github.com/anvil/anvil/internal/targetcluster"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// DefaultClustersNamespace is where registration Secrets of compute clusters
// live unless --clusters-namespace says otherwise.
const DefaultClustersNamespace = "c5c3-clusters"

// leaderElectionID names the Lease that elects the active operator replica.
const leaderElectionID = "anvil-operator.c5c3.io"

// PassTimeout bounds one pass of any controller. A compute cluster's
// apiserver can accept a connection and then stall, past the readiness
// probe; most controllers have one worker, so without a bound one stalled
// read would hold every object of that kind, on every cluster. It exceeds
// the registry's 2-minute cache-sync wait, which has its own bound.
const PassTimeout = 3 * time.Minute

// maxPoolWorkers bounds --pool-workers: each worker may hold a connection
// to a compute apiserver and to OpenStack, and more passes at once than
// this only move the queue into those servers.
const maxPoolWorkers = 32

// Options are the operator's command-line settings.
type Options struct {
	// MetricsBindAddress serves Prometheus metrics; "0" turns them off.
	MetricsBindAddress string
	// MetricsSecure serves the metrics over HTTPS and lets only a caller
	// whose token the apiserver authenticates, and who may get the
	// non-resource URL /metrics, read them: the metrics name namespaces,
	// pools and clusters, which are not for everyone on the network.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the metrics server;
	// empty makes the server generate a self-signed certificate.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz.
	HealthProbeBindAddress string
	// LeaderElect makes replicas elect one active instance through a Lease.
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease. Outside a cluster it must be
	// set, because there is no service-account namespace to default to.
	LeaderElectionNamespace string
	// ClustersNamespace holds the registration Secrets of compute clusters.
	// Empty turns multi-cluster support off.
	ClustersNamespace string
	// EnableWebhooks serves the admission webhooks. Without them only the
	// CRD schema's rules apply.
	EnableWebhooks bool
	// WebhookCertDir holds tls.crt and tls.key for the webhook server.
	WebhookCertDir string
	// WebhookPort is the webhook server's port.
	WebhookPort int
	// WebhookCerts make the operator issue the webhook certificates
	// itself; see webhookcerts_options.go.
	WebhookCerts WebhookCertOptions
	// ClusterProbeInterval is how often an engaged compute cluster's
	// readiness is checked; a cluster that fails is reported unavailable
	// within about this long.
	ClusterProbeInterval time.Duration
	// PoolResync is how often a settled NovaCompute pool polls Nova, which
	// cannot be watched. Each poll authenticates and lists the services.
	PoolResync time.Duration
	// PoolWorkers is how many NovaCompute pools' passes run at once; zero
	// means novacompute.DefaultWorkers.
	PoolWorkers int
	// AllowedImageRepositories are the repositories pools, chassis and
	// metadata agents may run; empty
	// means workloadpolicy.DefaultImageRepositories.
	AllowedImageRepositories []string
	// WatchNamespaces are the management namespaces the operator manages;
	// its cache lists and watches namespaced objects only there (Secrets
	// also in ClustersNamespace), so it needs, and holds, nothing of any
	// other namespace. One of it and AllNamespaces must be set.
	WatchNamespaces []string
	// AllNamespaces makes the operator manage, and cache the Secrets of,
	// every namespace (--watch-namespaces='*'). It has to be asked for:
	// an operator that reads every Secret of the cluster is not a default.
	AllNamespaces bool
	// AllowedKeystoneHosts are the Keystone hosts a Nova may name besides
	// its owning ControlPlane's; see keystonehosts.go.
	AllowedKeystoneHosts []string
	// AllowClusterWideRegistrations engages registration Secrets without a
	// namespaces key, with a cluster-wide cache of that compute cluster.
	// Off, they are refused; see targetcluster.CheckRegistrationScope.
	AllowClusterWideRegistrations bool
	// ManagementClusterID names this management cluster on what it writes
	// to compute clusters (childwriter.ManagementClusterLabel). Empty
	// means the UID of its kube-system Namespace, which is unique per
	// cluster and needs no configuration; see ResolveManagementCluster.
	ManagementClusterID string
	// RequireImageDigests refuses a privileged image selected by tag
	// alone, the defaults included; see workloadpolicy.Policy.
	RequireImageDigests bool
}

// BindFlags registers the options on a flag set with their defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8443",
		"Address the Prometheus metrics endpoint binds to; 0 disables it. In a pod, bind the pod IP.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to callers the apiserver authenticates and authorizes for get on /metrics; false serves plain HTTP to anyone.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "",
		"Directory with tls.crt and tls.key for the metrics server (default: a self-signed certificate).")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz probes bind to.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true,
		"Elect one active replica through a Lease, so that several replicas can run safely.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader-election Lease; defaults to the pod's namespace inside a cluster.")
	fs.StringVar(&o.ClustersNamespace, "clusters-namespace", DefaultClustersNamespace,
		"Namespace of the compute-cluster registration Secrets; empty disables compute clusters.")
	fs.BoolVar(&o.EnableWebhooks, "enable-webhooks", true,
		"Serve the admission webhooks; without them only the CRD schema's rules apply.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "",
		"Directory with tls.crt and tls.key for the webhook server (default: controller-runtime's).")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", targetcluster.DefaultProbeInterval,
		"How often the readiness of each compute cluster's apiserver is checked.")
	fs.BoolVar(&o.AllowClusterWideRegistrations, "allow-cluster-wide-registrations", false,
		"Engage registration Secrets that name no namespaces, caching every Secret and Node of their compute cluster; off, they are refused.")
	fs.StringVar(&o.ManagementClusterID, "management-cluster-id", "",
		"Identity of this management cluster, written on every object it places on a compute cluster so that another management cluster's Anvil never takes it (default: the UID of this cluster's kube-system Namespace). At most 63 characters of a label value.")
	fs.BoolVar(&o.RequireImageDigests, "require-image-digests", false,
		"Refuse a NovaCompute, OVNChassis or NeutronMetadataAgent whose image is selected by tag alone, default images included; each must then set spec.image with a digest.")
	fs.DurationVar(&o.PoolResync, "pool-resync-interval", novacompute.DefaultResync,
		"How often a settled NovaCompute pool polls Nova, which cannot be watched.")
	fs.IntVar(&o.PoolWorkers, "pool-workers", novacompute.DefaultWorkers,
		"How many NovaCompute pools' passes run at once.")
	fs.Func("watch-namespaces",
		"Comma-separated management namespaces the operator manages (required); its cache holds namespaced objects only there, and Secrets also in --clusters-namespace. '*' manages every namespace and caches every Secret of the cluster.",
		func(v string) error {
			o.WatchNamespaces, o.AllNamespaces = splitList(v), false
			if len(o.WatchNamespaces) == 1 && o.WatchNamespaces[0] == AllNamespacesValue {
				o.WatchNamespaces, o.AllNamespaces = nil, true
			}
			return nil
		})
	fs.Func("allowed-image-repositories",
		"Comma-separated image repositories NovaCompute pools, OVNChassis and NeutronMetadataAgents may run; an entry ending in / admits every repository below it (default "+
			strings.Join(workloadpolicy.DefaultImageRepositories, ",")+").",
		func(v string) error {
			o.AllowedImageRepositories = splitList(v)
			return nil
		})
	o.bindKeystoneHostsFlag(fs)
	o.bindWebhookCertFlags(fs)
}

// splitList reads a comma-separated flag value, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// WorkloadPolicy is what pools, chassis and metadata agents may run, for
// the webhooks and the controllers alike.
func (o *Options) WorkloadPolicy() workloadpolicy.Policy {
	return workloadpolicy.Policy{ImageRepositories: o.AllowedImageRepositories, RequireDigests: o.RequireImageDigests}
}

// Validate reports settings that cannot work, naming the flag.
func (o *Options) Validate() error {
	var errs []error
	if o.ClustersNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.ClustersNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--clusters-namespace %q is not a valid namespace name: %s", o.ClustersNamespace, msgs[0]))
		}
	}
	if o.LeaderElectionNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.LeaderElectionNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-election-namespace %q is not a valid namespace name: %s", o.LeaderElectionNamespace, msgs[0]))
		}
	}
	errs = append(errs, o.validateWatchNamespaces())
	if o.ClusterProbeInterval < 0 {
		errs = append(errs, errors.New("--cluster-probe-interval must not be negative"))
	}
	if o.PoolResync < 0 {
		errs = append(errs, errors.New("--pool-resync-interval must not be negative"))
	}
	if o.PoolWorkers < 0 || o.PoolWorkers > maxPoolWorkers {
		errs = append(errs, fmt.Errorf("--pool-workers must be between 0 (the default, %d) and %d", novacompute.DefaultWorkers, maxPoolWorkers))
	}
	if o.ManagementClusterID != "" {
		if msgs := validation.IsValidLabelValue(o.ManagementClusterID); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--management-cluster-id %q is not a valid label value: %s", o.ManagementClusterID, msgs[0]))
		}
	}
	if o.HealthProbeBindAddress == "" {
		errs = append(errs, errors.New("--health-probe-bind-address must not be empty"))
	}
	errs = append(errs, o.validateKeystoneHosts(), o.validateWebhookCerts())
	return errors.Join(errs...)
}

// AllNamespacesValue is the --watch-namespaces value that manages every
// namespace.
const AllNamespacesValue = "*"

// validateWatchNamespaces requires the namespaces to be named, or every
// namespace to be asked for alone: left out, the flag used to mean every
// namespace, and with it a cache of every Secret of the cluster.
func (o *Options) validateWatchNamespaces() error {
	if o.AllNamespaces {
		if len(o.WatchNamespaces) > 0 {
			return errors.New("--watch-namespaces: '*' stands alone; it cannot be combined with namespace names")
		}
		return nil
	}
	if len(o.WatchNamespaces) == 0 {
		return errors.New("--watch-namespaces is required: name the management namespaces the operator manages, " +
			"or pass '*' to manage every namespace, which caches every Secret of the cluster")
	}
	var errs []error
	for _, ns := range o.WatchNamespaces {
		if ns == AllNamespacesValue {
			errs = append(errs, errors.New("--watch-namespaces: '*' stands alone; it cannot be combined with namespace names"))
			continue
		}
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--watch-namespaces: %q is not a valid namespace name: %s", ns, msgs[0]))
		}
	}
	return errors.Join(errs...)
}

// ManagerOptions turns the settings into controller-runtime manager options.
func (o *Options) ManagerOptions() ctrl.Options {
	return ctrl.Options{
		Scheme:                  NewScheme(),
		Metrics:                 o.metricsOptions(),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// A replica that loses its Lease exits at once instead of finishing
		// its in-flight passes, so two replicas never write at the same time.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         o.cacheOptions(),
		Controller:                    config.Controller{ReconciliationTimeout: PassTimeout},
		WebhookServer: webhook.NewServer(webhook.Options{Port: o.WebhookPort, CertDir: o.WebhookCertDir,
			TLSOpts: []func(*tls.Config){secureTLS}}),
	}
}

// cacheOptions limits the cache to the watched namespaces, so that the
// operator neither needs nor holds objects of namespaces it does not
// manage; Secrets are also cached in the clusters namespace, where the
// registrations live. Only AllNamespaces caches every namespace.
func (o *Options) cacheOptions() cache.Options {
	if o.AllNamespaces {
		return cache.Options{}
	}
	all := map[string]cache.Config{}
	secrets := map[string]cache.Config{}
	for _, ns := range o.WatchNamespaces {
		all[ns] = cache.Config{}
		secrets[ns] = cache.Config{}
	}
	if o.ClustersNamespace != "" {
		secrets[o.ClustersNamespace] = cache.Config{}
	}
	return cache.Options{
		DefaultNamespaces: all,
		ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Namespaces: secrets}},
	}
}

// metricsOptions serves the metrics securely unless told otherwise: TLS
// 1.2 or later without HTTP/2, and every request authenticated with a
// TokenReview and authorized with a SubjectAccessReview for get on
// /metrics, which a Prometheus ServiceAccount is granted by a ClusterRole.
func (o *Options) metricsOptions() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if o.MetricsSecure {
		m.SecureServing = true
		m.CertDir = o.MetricsCertDir
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.TLSOpts = []func(*tls.Config){secureTLS}
	}
	return m
}

// NewManager builds the manager for the management cluster cfg points at,
// with its probes. Controllers are added by the caller, so tests can choose
// which ones run.
func NewManager(cfg *rest.Config, o *Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	certsConfig, err := o.webhookCertsConfig()
	if err != nil {
		return nil, err
	}
	mo := o.ManagerOptions()
	var certs *webhookcerts.Certs
	if certsConfig != nil {
		if certs, err = webhookcerts.New(*certsConfig); err != nil {
			return nil, fmt.Errorf("webhook certificates: %w", err)
		}
		mo.WebhookServer = certs.WrapServer(mo.WebhookServer)
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if certs != nil {
		if err := certs.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the webhook certificates: %w", err)
		}
	}
	if err := mgr.Add(newCertExpiryWatcher(o)); err != nil {
		return nil, fmt.Errorf("adding the certificate expiry gauge: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the liveness probe: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness probe: %w", err)
	}
	return mgr, nil
}

// Setup adds the registry of compute clusters, every controller and, when
// enabled, the admission webhooks to mgr. It returns the registry.
func Setup(ctx context.Context, mgr ctrl.Manager, o *Options) (*targetcluster.Registry, error) {
	id, err := ResolveManagementCluster(ctx, mgr.GetAPIReader(), o.ManagementClusterID)
	if err != nil {
		return nil, err
	}
	childwriter.SetManagementCluster(id)
	reg := targetcluster.New(mgr, targetcluster.Options{Namespace: o.ClustersNamespace, ProbeInterval: o.ClusterProbeInterval,
		AllowClusterWide: o.AllowClusterWideRegistrations})
	if err := reg.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the target-cluster registry: %w", err)
	}
	novaReconciler := &nova.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg, Keystone: o.KeystonePolicy()}
	if err := novaReconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the Nova controller: %w", err)
	}
	cpReconciler := &controlplane.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg, PoolPolicy: o.WorkloadPolicy(), KeystonePolicy: o.KeystonePolicy()}
	if err := cpReconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the ControlPlane controller: %w", err)
	}
	poolReconciler := &novacompute.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg, Resync: o.PoolResync, Workers: o.PoolWorkers,
		Policy: o.WorkloadPolicy(), Keystone: o.KeystonePolicy()}
	if err := poolReconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the NovaCompute controller: %w", err)
	}
	centralReconciler := &ovncentral.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg}
	if err := centralReconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the OVNCentral controller: %w", err)
	}
	chassisReconciler := &ovnchassis.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg, Policy: o.WorkloadPolicy()}
	if err := chassisReconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the OVNChassis controller: %w", err)
	}
	agentReconciler := &neutronmetadataagent.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg, Policy: o.WorkloadPolicy()}
	if err := agentReconciler.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the NeutronMetadataAgent controller: %w", err)
	}
	exportConditions(mgr)
	if o.EnableWebhooks {
		if err := anvilwebhook.SetupNovaWebhook(mgr, o.KeystonePolicy()); err != nil {
			return nil, fmt.Errorf("setting up the Nova webhook: %w", err)
		}
		if err := anvilwebhook.SetupControlPlaneWebhook(mgr, o.KeystonePolicy()); err != nil {
			return nil, fmt.Errorf("setting up the ControlPlane webhook: %w", err)
		}
		if err := anvilwebhook.SetupNovaComputeWebhook(mgr, o.WorkloadPolicy()); err != nil {
			return nil, fmt.Errorf("setting up the NovaCompute webhook: %w", err)
		}
		if err := anvilwebhook.SetupOVNCentralWebhook(mgr); err != nil {
			return nil, fmt.Errorf("setting up the OVNCentral webhook: %w", err)
		}
		if err := anvilwebhook.SetupOVNChassisWebhook(mgr, o.WorkloadPolicy()); err != nil {
			return nil, fmt.Errorf("setting up the OVNChassis webhook: %w", err)
		}
		if err := anvilwebhook.SetupNeutronMetadataAgentWebhook(mgr, o.WorkloadPolicy()); err != nil {
			return nil, fmt.Errorf("setting up the NeutronMetadataAgent webhook: %w", err)
		}
	}
	return reg, nil
}

// secureTLS sets what every TLS listener of the operator accepts: TLS 1.2
// or later, and HTTP/1.1 only, since HTTP/2's rapid-reset and stream
// floods cost a server more than they cost the client.
func secureTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS12
	c.NextProtos = []string{"http/1.1"}
}

// ResolveManagementCluster returns the management cluster's identity: the
// one given, or else the UID of the cluster's kube-system Namespace, which
// Kubernetes creates with the cluster and never changes.
func ResolveManagementCluster(ctx context.Context, r client.Reader, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the kube-system Namespace for the management cluster's identity (or set --management-cluster-id): %w", err)
	}
	return string(ns.UID), nil
}
