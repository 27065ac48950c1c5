package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/kubeconfig"
)

// operatorUser is the management cluster's user of the operator process.
// Nothing else authenticates as it, so the audit log tells its writes from
// the test's; on the compute clusters the operator is the registration's
// user, which nothing else uses either.
const operatorUser = "anvil-chaos-operator"

var (
	buildOnce   sync.Once
	buildBinary string
	buildErr    error
)

// operatorBinary builds ./cmd/anvil-operator once per test binary into a
// temporary directory: the chaos tests kill the shipped program, not a
// manager inside the test process.
func operatorBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := env.TempDir("anvil-chaos-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildBinary = filepath.Join(dir, "anvil-operator")
		cmd := exec.Command("go", "build", "-o", buildBinary, "./cmd/anvil-operator")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the operator: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBinary
}

// operatorProcess is the operator running as a child process against the
// management cluster, restartable after a kill. Its log accumulates over
// every incarnation in one file.
type operatorProcess struct {
	binary  string
	args    []string
	logPath string
	health  string
	webhook string

	cmd  *exec.Cmd
	done chan struct{}
	// starts counts the incarnations.
	starts int
}

// newOperator prepares, but does not start, an operator process with the
// flags a deployment would give it: the clusters namespace, the webhooks
// the management apiserver calls (on the port and with the certificate
// envtest registered), probes on loopback and no metrics listener. Leader
// election is off: one replica runs, and a replacement should not sit out
// the killed one's lease in every round.
func newOperator(t *testing.T, e *testenv.Environment, extra ...string) *operatorProcess {
	t.Helper()
	// The directory outlives a failed test, so that the operator's log
	// can be read afterwards; a test that passes removes it.
	dir, err := os.MkdirTemp("", "anvil-chaos-operator-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the operator's log stays in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	cfg, err := e.Management.AddUser(operatorUser, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := kubeconfig.Embedded(e.Management.Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "operator.kubeconfig")
	if err := os.WriteFile(kc, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := netutil.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	wh := e.Management.WebhookServerOptions()
	op := &operatorProcess{
		binary:  operatorBinary(t),
		logPath: filepath.Join(dir, "operator.log"),
		health:  "127.0.0.1:" + strconv.Itoa(ports[0]),
		webhook: "127.0.0.1:" + strconv.Itoa(wh.Port),
	}
	op.args = append([]string{
		"--kubeconfig=" + kc,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + op.health,
		"--clusters-namespace=" + e.ClustersNamespace,
		// The namespace the chaos suite works in, as the chart names its own.
		"--watch-namespaces=" + ns,
		// testenv registers its compute clusters without a namespaces key.
		"--allow-cluster-wide-registrations",
		"--enable-webhooks=true",
		"--webhook-cert-dir=" + wh.CertDir,
		"--webhook-port=" + strconv.Itoa(wh.Port),
		"--allowed-keystone-hosts=" + strings.Join(cloud.KeystoneHosts(t), ","),
	}, extra...)
	t.Cleanup(op.stop)
	return op
}

// start runs a new incarnation and waits until it is ready and serves its
// webhooks, which the apiserver needs before it admits any Anvil object.
func (op *operatorProcess) start(t *testing.T) {
	t.Helper()
	logFile, err := os.OpenFile(op.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(op.binary, op.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The operator dies with the test binary, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting the operator: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	op.cmd, op.done = cmd, done
	op.starts++
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, errors.New("the operator exited")
		default:
		}
		return op.ready(ctx), nil
	})
	if err != nil {
		t.Fatalf("the operator (incarnation %d) did not become ready: %v; see %s", op.starts, err, op.logPath)
	}
}

// ready tells whether the readiness probe answers and the webhook port
// accepts connections.
func (op *operatorProcess) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+op.health+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", op.webhook)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// kill sends SIGKILL, as an OOM kill or a node loss would end the
// operator: no deferred function, no lease release, no last status patch.
func (op *operatorProcess) kill(t *testing.T) {
	t.Helper()
	if op.cmd == nil {
		return
	}
	if err := op.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("killing the operator: %v", err)
	}
	<-op.done
	op.cmd = nil
}

// stop ends the current incarnation gracefully, at the end of a test.
func (op *operatorProcess) stop() {
	if op.cmd == nil {
		return
	}
	_ = op.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-op.done:
	case <-time.After(30 * time.Second):
		_ = op.cmd.Process.Kill()
		<-op.done
	}
	op.cmd = nil
}

// log returns everything every incarnation logged.
func (op *operatorProcess) log(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(op.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
