package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

const (
	// CertManagerNamespace is cert-manager's cluster resource namespace: the
	// Secret a ClusterIssuer signs with must live here.
	CertManagerNamespace = "cert-manager"
	// SelfSignedClusterIssuer signs the CA certificate, and nothing else.
	SelfSignedClusterIssuer = "anvil-selfsigned"
	// CAClusterIssuer issues from the CA in CASecret. Tests and the devstack
	// name it in an OVNCentral's tls.issuerRef.
	CAClusterIssuer = "anvil-ca"
	// CASecret is the CA's Certificate and Secret in CertManagerNamespace;
	// its ca.crt is what a client of an issued certificate trusts.
	CASecret = "anvil-ca"

	// CertManagerBinary is the controller `make tools` builds into bin/.
	CertManagerBinary = "cert-manager-controller"
)

// certManagerControllers are the controllers the process runs: the issuers,
// the certificate lifecycle, and the CertificateRequest approver and signers
// for the two issuer types the chain uses. Naming them keeps a later
// upstream default (ACME solvers, ingress shims) from starting here.
var certManagerControllers = []string{
	"issuers", "clusterissuers",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager",
	"certificaterequests-approver", "certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
}

// CertManagerCRDDir is where `make tools` copies cert-manager's CRDs from
// the module the controller is built from, so the two always match.
func CertManagerCRDDir(binDir string) string { return filepath.Join(binDir, "cert-manager-crds") }

// CertManagerArgs returns the controller's arguments for an apiserver
// reached through a kubeconfig file. The file carries the credential, so
// none appears in the process's arguments. The process opens no port and
// has no ACME, Vault or Venafi code, so it dials nothing but the apiserver.
func CertManagerArgs(kubeconfigPath string) []string {
	return []string{
		"--kubeconfig=" + kubeconfigPath,
		// One replica per apiserver; a Lease would only slow the start.
		"--leader-elect=false",
		"--controllers=" + strings.Join(certManagerControllers, ","),
		"--cluster-resource-namespace=" + CertManagerNamespace,
		// Upstream's chart default: each issuance step, no object dumps.
		"--v=2",
	}
}

// CertManagerCRDs reads cert-manager's CRDs from the directory `make tools`
// fills (CertManagerCRDDir), one CRD a file.
func CertManagerCRDs(binDir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir := CertManagerCRDDir(binDir)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("cert-manager's CRDs are missing from %s; run 'make tools' first", dir)
	}
	defs := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		def := &apiextensionsv1.CustomResourceDefinition{}
		// Strict: a field this apiextensions version does not know would
		// otherwise vanish without a word.
		if err := yaml.UnmarshalStrict(raw, def); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		defs = append(defs, def)
	}
	return defs, nil
}

// InstallCertManagerCRDs installs cert-manager's CRDs from binDir and waits
// until the apiserver serves them. Installing again updates them in place.
func InstallCertManagerCRDs(cfg *rest.Config, binDir string) error {
	defs, err := CertManagerCRDs(binDir)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: defs}); err != nil {
		return fmt.Errorf("installing cert-manager's CRDs: %w", err)
	}
	return nil
}

// EnsureCAClusterIssuer creates the CA chain unless it exists: the
// SelfSignedClusterIssuer, a CA Certificate in CertManagerNamespace that it
// signs, and CAClusterIssuer, which signs with that CA. It then waits until
// CAClusterIssuer is Ready, which takes a running controller. Fields it
// does not set are left as the apiserver defaulted them, so a second call
// writes nothing.
func EnsureCAClusterIssuer(ctx context.Context, c client.Client) error {
	if err := ensureNamespace(ctx, c, CertManagerNamespace, nil); err != nil {
		return err
	}
	selfSigned := &cmv1.ClusterIssuer{}
	selfSigned.Name = SelfSignedClusterIssuer
	if _, err := controllerutil.CreateOrUpdate(ctx, c, selfSigned, func() error {
		cfg := selfSigned.Spec.SelfSigned
		if cfg == nil {
			cfg = &cmv1.SelfSignedIssuer{}
		}
		selfSigned.Spec.IssuerConfig = cmv1.IssuerConfig{SelfSigned: cfg}
		return nil
	}); err != nil {
		return fmt.Errorf("the ClusterIssuer %s: %w", SelfSignedClusterIssuer, err)
	}
	ca := &cmv1.Certificate{}
	ca.Name, ca.Namespace = CASecret, CertManagerNamespace
	if _, err := controllerutil.CreateOrUpdate(ctx, c, ca, func() error {
		ca.Spec.IsCA = true
		ca.Spec.CommonName = CAClusterIssuer
		ca.Spec.SecretName = CASecret
		ca.Spec.IssuerRef = cmmeta.IssuerReference{Name: SelfSignedClusterIssuer, Kind: cmv1.ClusterIssuerKind, Group: "cert-manager.io"}
		if ca.Spec.PrivateKey == nil {
			ca.Spec.PrivateKey = &cmv1.CertificatePrivateKey{}
		}
		ca.Spec.PrivateKey.Algorithm, ca.Spec.PrivateKey.Size = cmv1.ECDSAKeyAlgorithm, 256
		return nil
	}); err != nil {
		return fmt.Errorf("the CA Certificate %s/%s: %w", CertManagerNamespace, CASecret, err)
	}
	issuer := &cmv1.ClusterIssuer{}
	issuer.Name = CAClusterIssuer
	if _, err := controllerutil.CreateOrUpdate(ctx, c, issuer, func() error {
		cfg := issuer.Spec.CA
		if cfg == nil {
			cfg = &cmv1.CAIssuer{}
		}
		cfg.SecretName = CASecret
		issuer.Spec.IssuerConfig = cmv1.IssuerConfig{CA: cfg}
		return nil
	}); err != nil {
		return fmt.Errorf("the ClusterIssuer %s: %w", CAClusterIssuer, err)
	}
	return waitClusterIssuerReady(ctx, c, CAClusterIssuer, 2*time.Minute)
}

// waitClusterIssuerReady polls until cert-manager reports the issuer Ready.
func waitClusterIssuerReady(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		issuer := &cmv1.ClusterIssuer{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, issuer); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ready, message := ClusterIssuerReady(issuer)
		last = message
		return ready, nil
	})
	if err != nil {
		return fmt.Errorf("the ClusterIssuer %s is not Ready (%s): %w", name, last, err)
	}
	return nil
}

// ClusterIssuerReady reports whether cert-manager has marked the issuer
// Ready for its current generation, and its Ready message either way.
func ClusterIssuerReady(issuer *cmv1.ClusterIssuer) (bool, string) {
	for _, cond := range issuer.Status.Conditions {
		if cond.Type == cmv1.IssuerConditionReady {
			return cond.Status == cmmeta.ConditionTrue && cond.ObservedGeneration == issuer.Generation, cond.Message
		}
	}
	return false, "no Ready condition yet"
}

// CertManager is a cert-manager controller running against one cluster.
type CertManager struct {
	// LogPath is the controller's log, kept until the Environment stops.
	LogPath string
}

// certManagerRun is one controller process and the tests that use it.
type certManagerRun struct {
	proc  *process
	log   string
	users int
}

// certManagers holds the running controllers by cluster. Two controllers
// on one apiserver would race for the same Certificates, so parallel tests
// share one, and the last to finish stops it.
var certManagers = struct {
	sync.Mutex
	runs map[*Cluster]*certManagerRun
}{runs: map[*Cluster]*certManagerRun{}}

// StartCertManager makes sure cert-manager's controller runs against c as
// a local process, with its CRDs installed and the CA chain Ready, so the
// test can issue from CAClusterIssuer. The process is shared by the tests
// of c that run at once and stops when the last of them has finished. A
// failed test gets the tail of the controller's log.
func StartCertManager(t testing.TB, c *Cluster) *CertManager {
	t.Helper()
	run, err := acquireCertManager(c)
	if err != nil {
		t.Fatalf("starting cert-manager on %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cert-manager's log (%s) ends with:\n%s", run.log, logTail(run.log, 40))
		}
		if err := releaseCertManager(c); err != nil {
			t.Errorf("stopping cert-manager on %s: %v", c.Name, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := EnsureCAClusterIssuer(ctx, c.Client); err != nil {
		t.Fatalf("the CA ClusterIssuer on %s: %v; see %s", c.Name, err, run.log)
	}
	return &CertManager{LogPath: run.log}
}

// acquireCertManager starts the controller on c unless it runs already,
// and counts one more user.
func acquireCertManager(c *Cluster) (*certManagerRun, error) {
	certManagers.Lock()
	defer certManagers.Unlock()
	users := 1
	if run := certManagers.runs[c]; run != nil {
		if run.proc.alive() {
			run.users++
			return run, nil
		}
		// It died under tests that still hold it; their releases count
		// against the replacement.
		users += run.users
	}
	if err := InstallCertManagerCRDs(c.Config, c.binDir); err != nil {
		return nil, err
	}
	log := filepath.Join(c.dir, CertManagerBinary+".log")
	proc, err := startProcess(filepath.Join(c.binDir, CertManagerBinary), CertManagerBinary, log, CertManagerArgs(c.KubeconfigPath))
	if err != nil {
		return nil, err
	}
	run := &certManagerRun{proc: proc, log: log, users: users}
	certManagers.runs[c] = run
	return run, nil
}

// releaseCertManager counts one user less and stops the controller when
// none is left.
func releaseCertManager(c *Cluster) error {
	certManagers.Lock()
	defer certManagers.Unlock()
	run := certManagers.runs[c]
	if run == nil {
		return nil
	}
	if run.users--; run.users > 0 {
		return nil
	}
	delete(certManagers.runs, c)
	return (&workloads{procs: []*process{run.proc}}).stop()
}

// alive reports whether the process has not exited yet.
func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// logTail returns the last n lines of a log file, or why it cannot.
func logTail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
