package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/kubeconfig"
)

// processUser is the management cluster's user of an operator process.
const processUser = "anvil-bench-operator"

// OperatorProcess is ./cmd/anvil-operator running as a child process, so
// that its memory is its own and not the bench's apiserver clients' and
// watches', and its metrics are read the way Prometheus reads them.
type OperatorProcess struct {
	cmd             *exec.Cmd
	done            chan struct{}
	health, metrics string
	webhook         string
}

// BuildOperator builds ./cmd/anvil-operator into dir and returns the path.
func BuildOperator(ctx context.Context, dir string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "anvil-operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/anvil-operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator: %w\n%s", err, out)
	}
	return bin, nil
}

// StartOperatorProcess runs binary against env's management cluster with
// the flags a deployment gives it, metrics in plain HTTP on loopback, and
// waits until it is ready and serves its webhooks. Its log goes to logs.
func StartOperatorProcess(ctx context.Context, env *testenv.Environment, binary, dir string, logs io.Writer) (*OperatorProcess, error) {
	cfg, err := env.Management.AddUser(processUser, "system:masters")
	if err != nil {
		return nil, err
	}
	raw, err := kubeconfig.Embedded(env.Management.Name, cfg)
	if err != nil {
		return nil, err
	}
	kc := filepath.Join(dir, "operator.kubeconfig")
	if err := os.WriteFile(kc, raw, 0o600); err != nil {
		return nil, err
	}
	ports, err := netutil.FreeLoopbackPorts(2)
	if err != nil {
		return nil, err
	}
	wh := env.Management.WebhookServerOptions()
	op := &OperatorProcess{
		health:  "127.0.0.1:" + strconv.Itoa(ports[0]),
		metrics: "127.0.0.1:" + strconv.Itoa(ports[1]),
		webhook: "127.0.0.1:" + strconv.Itoa(wh.Port),
		done:    make(chan struct{}),
	}
	op.cmd = exec.Command(binary,
		"--kubeconfig="+kc, "--leader-elect=false",
		"--metrics-bind-address="+op.metrics, "--metrics-secure=false",
		"--health-probe-bind-address="+op.health,
		"--clusters-namespace="+env.ClustersNamespace,
		"--watch-namespaces="+Namespace,
		// testenv registers its compute clusters without a namespaces key.
		"--allow-cluster-wide-registrations",
		"--enable-webhooks=true", "--webhook-cert-dir="+wh.CertDir, "--webhook-port="+strconv.Itoa(wh.Port),
		"--allowed-keystone-hosts="+strings.Join(fixtureKeystoneHosts, ","),
	)
	op.cmd.Stdout, op.cmd.Stderr = logs, logs
	// The operator dies with the bench, whatever ends it.
	op.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := op.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	go func() {
		_ = op.cmd.Wait()
		close(op.done)
	}()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-op.done:
			return false, errors.New("the operator exited")
		default:
		}
		return op.ready(ctx), nil
	})
	if err != nil {
		op.Stop()
		return nil, fmt.Errorf("the operator did not become ready: %w", err)
	}
	return op, nil
}

// ready tells whether the readiness probe answers and the webhook port
// accepts connections.
func (op *OperatorProcess) ready(ctx context.Context) bool {
	if _, err := op.get(ctx, "http://"+op.health+"/readyz"); err != nil {
		return false
	}
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", op.webhook)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func (op *OperatorProcess) get(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

// Metrics returns the operator's /metrics in the text format.
func (op *OperatorProcess) Metrics(ctx context.Context) (string, error) {
	return op.get(ctx, "http://"+op.metrics+"/metrics")
}

// Memory returns the operator's peak and current resident set, in bytes,
// from the kernel's VmHWM and VmRSS.
func (op *OperatorProcess) Memory() (peak, current int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", op.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		field, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (field != "VmHWM" && field != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("reading %s: %w", field, err)
		}
		if field == "VmHWM" {
			peak = kb * 1024
		} else {
			current = kb * 1024
		}
	}
	return peak, current, sc.Err()
}

// Stop ends the operator with SIGTERM, and SIGKILL if it lingers.
func (op *OperatorProcess) Stop() {
	_ = op.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-op.done:
	case <-time.After(10 * time.Second):
		_ = op.cmd.Process.Kill()
		<-op.done
	}
}
