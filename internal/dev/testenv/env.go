package testenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/config/crd"
	webhookconfig "github.com/anvil/anvil/config/webhook"
	"github.com/anvil/anvil/internal/kubeconfig"
	"github.com/anvil/anvil/internal/operator"
	"github.com/anvil/anvil/internal/targetcluster"
)

const (
	// ManagementClusterName names the management cluster in logs and files.
	ManagementClusterName = "mgmt"

	// WorkloadNamespace exists on every cluster; Anvil's objects live there.
	// It carries WorkloadNamespaceLabels on every cluster, though only the
	// management cluster's opt-in counts, as the devstack's does.
	WorkloadNamespace = "openstack"

	// RegistrationUser is the identity a registration kubeconfig carries.
	// It is distinct from the admin the tests use, so that the two can be
	// told apart in audit logs and later restricted independently.
	RegistrationUser = "anvil-registration"
)

// Options shape an Environment.
type Options struct {
	// ComputeClusters is how many compute clusters to start; they are named
	// compute-a, compute-b, and so on. Zero starts only the management
	// cluster.
	ComputeClusters int

	// ClustersNamespace holds the registration Secrets; it defaults to the
	// operator's default.
	ClustersNamespace string

	// Audit makes every apiserver log its write requests, which a test
	// reads with Cluster.AuditMark and Cluster.AuditWrites.
	Audit bool

	// AuditReads makes the audit log record reads (get, list, watch) as
	// well, which Cluster.AuditRequests returns; it implies Audit.
	AuditReads bool

	// Long names the make target that runs this package as a long suite.
	// When set and the run leaves long suites out (SkipsLongSuites), Run
	// starts no cluster and the tests that call Require skip; the
	// package's tests without clusters still run.
	Long string
}

// Environment is a running management cluster plus its compute clusters.
type Environment struct {
	// Management is the cluster that holds Anvil's CRDs and registrations.
	Management *Cluster
	// Compute are the registered compute clusters, in name order.
	Compute []*Cluster
	// ClustersNamespace holds the registration Secrets on Management.
	ClustersNamespace string
	// Scheme knows the built-in kinds and every Anvil kind.
	Scheme *runtime.Scheme

	dir        string
	audit      bool
	auditReads bool
	// scratch are the directories TempDir made, removed after Stop.
	scratchMu sync.Mutex
	scratch   []string
}

// Cluster is one real kube-apiserver with its etcd.
type Cluster struct {
	// Name is the cluster's name; for a compute cluster it is also the name
	// of its registration Secret.
	Name string
	// Config authenticates as a cluster administrator.
	Config *rest.Config
	// Client is an uncached administrator client.
	Client client.Client
	// KubeconfigPath is an administrator kubeconfig file with everything
	// inline, for processes started next to the apiserver.
	KubeconfigPath string

	env       *envtest.Environment
	dir       string
	binDir    string
	workloads *workloads
	auditLog  string
}

// ComputeClusterName returns the name of the i-th compute cluster (0-based):
// compute-a, compute-b, ...
func ComputeClusterName(i int) string {
	return fmt.Sprintf("compute-%c", 'a'+i)
}

// Start brings up the management cluster and the compute clusters, installs
// the CRDs and creates the namespaces and registration Secrets.
func Start(ctx context.Context, opts Options) (_ *Environment, err error) {
	if opts.ComputeClusters < 0 || opts.ComputeClusters > 26 {
		return nil, fmt.Errorf("ComputeClusters must be between 0 and 26, got %d", opts.ComputeClusters)
	}
	opts.ClustersNamespace = cmp.Or(opts.ClustersNamespace, operator.DefaultClustersNamespace)
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "anvil-testenv-")
	if err != nil {
		return nil, err
	}
	e := &Environment{ClustersNamespace: opts.ClustersNamespace, Scheme: operator.NewScheme(), dir: dir,
		audit: opts.Audit || opts.AuditReads, auditReads: opts.AuditReads}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	crds, err := crd.Definitions()
	if err != nil {
		return nil, err
	}
	validating, err := webhookconfig.Validating()
	if err != nil {
		return nil, err
	}
	// The webhooks point at a server the test process runs, on a port
	// webhookPort picks; envtest makes its serving certificate.
	port, err := webhookPort()
	if err != nil {
		return nil, err
	}
	webhooks := envtest.WebhookInstallOptions{ValidatingWebhooks: validating, LocalServingHost: "127.0.0.1", LocalServingPort: port}
	if e.Management, err = e.startCluster(ManagementClusterName, binDir, crds, webhooks); err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, e.Management.Client, opts.ClustersNamespace, nil); err != nil {
		return nil, err
	}
	for i := range opts.ComputeClusters {
		c, err := e.startCluster(ComputeClusterName(i), binDir, nil, envtest.WebhookInstallOptions{})
		if err != nil {
			return nil, err
		}
		e.Compute = append(e.Compute, c)
		if err := e.register(ctx, c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// startCluster starts one apiserver and etcd and prepares the namespace
// every cluster has.
func (e *Environment) startCluster(name, binDir string, crds []*apiextensionsv1.CustomResourceDefinition, webhooks envtest.WebhookInstallOptions) (*Cluster, error) {
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// A fixed certificate directory, instead of envtest's temporary one,
	// survives StopAPIServer, so a restarted apiserver keeps its port, its
	// serving CA and its users, exactly as a real cluster coming back would.
	certDir := filepath.Join(dir, "apiserver")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	apiServer := &envtest.APIServer{CertDir: certDir}
	// kube-apiserver waits up to its request timeout for open watches when
	// it shuts down, and every test keeps watches open; 60s per stop would
	// dominate the suite. Test requests finish in milliseconds.
	apiServer.Configure().Set("request-timeout", "5s")
	var auditLog string
	if e.audit {
		var err error
		if auditLog, err = enableAudit(apiServer, dir, e.auditReads); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		ControlPlane:             envtest.ControlPlane{APIServer: apiServer},
		WebhookInstallOptions:    webhooks,
		BinaryAssetsDirectory:    binDir,
		CRDs:                     crds,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   e.Scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	var cfg *rest.Config
	err := withSingleProc(func() (err error) {
		cfg, err = env.Start()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("starting cluster %s: %w", name, err)
	}
	c := &Cluster{Name: name, Config: cfg, env: env, dir: dir, binDir: binDir, auditLog: auditLog}
	if c.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		return c, err
	}
	raw, err := kubeconfig.Embedded(name, cfg)
	if err != nil {
		return c, err
	}
	c.KubeconfigPath = filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(c.KubeconfigPath, raw, 0o600); err != nil {
		return c, err
	}
	if err := ensureNamespace(context.Background(), c.Client, WorkloadNamespace, WorkloadNamespaceLabels()); err != nil {
		return c, err
	}
	return c, nil
}

// WorkloadNamespaceLabels are the labels WorkloadNamespace carries: the
// opt-in to NovaCompute pools, which the operator refuses anywhere else,
// and, as on a privileged namespace the access chart creates, the request
// for the hypervisor operator's credentials. A test that needs a namespace
// without them creates one of its own, or removes the label for a while.
func WorkloadNamespaceLabels() map[string]string {
	return map[string]string{
		novav1alpha1.PrivilegedPoolsLabel:               "true",
		c5c3v1alpha1.HypervisorOperatorCredentialsLabel: "true",
	}
}

// register writes the registration Secret of a compute cluster onto the
// management cluster, with a kubeconfig of a user of its own.
func (e *Environment) register(ctx context.Context, c *Cluster) error {
	raw, err := c.RegistrationKubeconfig()
	if err != nil {
		return err
	}
	secret := targetcluster.BuildRegistrationSecret(c.Name, e.ClustersNamespace, raw, "")
	if err := e.Management.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("registering %s: %w", c.Name, err)
	}
	return nil
}

// RegistrationKubeconfig provisions a cluster-admin user on c and returns a
// kubeconfig for it with the CA, certificate and key inline.
func (c *Cluster) RegistrationKubeconfig() ([]byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: RegistrationUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provisioning the registration user on %s: %w", c.Name, err)
	}
	return kubeconfig.Embedded(c.Name, user.Config())
}

// AddUser provisions a user with the given groups on c and returns a rest
// config that authenticates as it. Tests use it for identities with limited
// RBAC.
func (c *Cluster) AddUser(name string, groups ...string) (*rest.Config, error) {
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, err
	}
	return user.Config(), nil
}

// WebhookServerOptions returns where the test process must serve the
// admission webhooks this cluster calls. Only the management cluster has
// webhooks; a manager that creates Anvil objects must serve them.
func (c *Cluster) WebhookServerOptions() webhook.Options {
	o := c.env.WebhookInstallOptions
	return webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir}
}

// StopAPIServer stops the cluster's kube-apiserver and leaves etcd running,
// which is how an unreachable compute cluster looks to the operator.
func (c *Cluster) StopAPIServer() error {
	return c.env.ControlPlane.GetAPIServer().Stop()
}

// StartAPIServer starts a kube-apiserver stopped by StopAPIServer again, on
// the same address with the same certificates.
func (c *Cluster) StartAPIServer() error {
	return withSingleProc(c.env.ControlPlane.GetAPIServer().Start)
}

// singleProc limits a cluster process (etcd, kube-apiserver, the controller
// manager, the scheduler, kwok) to one running Go thread. Many of them
// share two cores in make test, and with one P an apiserver spends about a
// quarter less CPU starting and a sixth less idling: its garbage collector
// no longer runs workers on every core.
const singleProc = "GOMAXPROCS=1"

// envMu serialises withSingleProc: envtest starts its processes with the
// test binary's environment and takes no other.
var envMu sync.Mutex

// withSingleProc runs start, which starts envtest processes, with
// singleProc in the environment they inherit, and restores it after.
func withSingleProc(start func() error) error {
	envMu.Lock()
	defer envMu.Unlock()
	name, value, _ := strings.Cut(singleProc, "=")
	old, had := os.LookupEnv(name)
	if err := os.Setenv(name, value); err != nil {
		return err
	}
	defer func() {
		if had {
			_ = os.Setenv(name, old)
		} else {
			_ = os.Unsetenv(name)
		}
	}()
	return start()
}

// CertDir is where the apiserver keeps its certificates and the key that
// signs service-account tokens.
func (c *Cluster) CertDir() string {
	return c.env.ControlPlane.GetAPIServer().CertDir
}

// ComputeCluster returns the compute cluster with the given name, or nil.
func (e *Environment) ComputeCluster(name string) *Cluster {
	for _, c := range e.Compute {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Stop stops every process the environment started and removes its files.
func (e *Environment) Stop() error {
	var errs []error
	for _, c := range append([]*Cluster{e.Management}, e.Compute...) {
		if c == nil {
			continue
		}
		if err := c.stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", c.Name, err))
		}
	}
	if len(errs) == 0 && e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	// Processes of the test binary (pod runners) may still write into a
	// scratch directory until the binary exits, so its removal is best
	// effort: a leftover is not a failed test.
	e.scratchMu.Lock()
	defer e.scratchMu.Unlock()
	for _, d := range e.scratch {
		_ = os.RemoveAll(d)
	}
	e.scratch = nil
	return errors.Join(errs...)
}

// TempDir makes a directory that lives as long as the Environment, for
// state that outlives a single test (a pod runner's, a built binary): Stop
// removes it, so that a run leaves nothing behind in the temporary
// directory.
func (e *Environment) TempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	e.scratchMu.Lock()
	defer e.scratchMu.Unlock()
	e.scratch = append(e.scratch, dir)
	return dir, nil
}

func (c *Cluster) stop() error {
	var errs []error
	if c.workloads != nil {
		errs = append(errs, c.workloads.stop())
		c.workloads = nil
	}
	if c.env != nil {
		errs = append(errs, c.env.Stop())
	}
	return errors.Join(errs...)
}

// ensureNamespace creates a namespace with labels unless it already exists.
func ensureNamespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
