package devstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
)

// startOperator builds the operator and runs it against the management
// cluster: by default installed from its chart and run by the management
// cluster's pod runner (installOperatorChart), with --operator=process as a
// background process. Either way it serves its admission webhooks with the
// certificate ensurePKI issued, and an operator of the same binary that
// answers is kept, so a repeated Up restarts nothing.
func (s *Stack) startOperator(ctx context.Context, st *state) (string, error) {
	binary := s.operatorBinary()
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/anvil-operator")
	build.Dir = s.root
	build.Stdout, build.Stderr = indent(s.out), indent(s.out)
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the operator: %w", err)
	}
	sum, err := fileSHA256(binary)
	if err != nil {
		return "", err
	}
	if s.operatorMode == OperatorModeChart {
		return s.installOperatorChart(ctx, st, sum)
	}
	return s.startOperatorProcess(ctx, st, binary, sum)
}

// startOperatorProcess runs the operator as a background process of its
// own session with the devstack's admin kubeconfig.
func (s *Stack) startOperatorProcess(ctx context.Context, st *state, binary, sum string) (string, error) {
	if st.Operator != nil && st.Operator.Mode == OperatorModeChart {
		// Only one operator may run: the chart's goes.
		if err := s.uninstallOperatorChart(ctx); err != nil {
			return "", err
		}
		st.Operator = nil
	}
	pool, _, err := s.caPool()
	if err != nil {
		return "", err
	}

	previousWebhookPort := 0
	if op := st.Operator; op != nil {
		previousWebhookPort = op.WebhookPort
		if processAlive(op.PID) {
			// An operator from before the devstack served webhooks has no
			// webhook port and is restarted with one.
			if op.BinarySHA256 == sum && healthy(ctx, op.HealthAddr) && webhookServing(ctx, pool, op.WebhookPort) {
				return fmt.Sprintf("already running as pid %d, webhooks on %s", op.PID, webhookURL(op.WebhookPort, "")), nil
			}
			if err := stopProcess(op.PID, 15*time.Second); err != nil {
				return "", err
			}
		}
	}
	st.Operator = nil

	ports, err := netutil.FreeLoopbackPorts(3)
	if err != nil {
		return "", err
	}
	webhookPort := ports[2]
	// Keeping the previous port keeps the registered webhook URLs right
	// while the operator restarts; installWebhooks rewrites them anyway
	// when the port had to change. The kernel may just have handed the
	// old port out for metrics or probes, which then wins.
	if previousWebhookPort != 0 && !slices.Contains(ports[:2], previousWebhookPort) && portFree(previousWebhookPort) {
		webhookPort = previousWebhookPort
	}
	op := &operatorState{
		Mode:         OperatorModeProcess,
		BinarySHA256: sum,
		MetricsAddr:  "127.0.0.1:" + strconv.Itoa(ports[0]),
		HealthAddr:   "127.0.0.1:" + strconv.Itoa(ports[1]),
		WebhookPort:  webhookPort,
	}
	logFile, err := os.OpenFile(s.operatorLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	hosts, err := s.allowedKeystoneHosts()
	if err != nil {
		return "", err
	}
	args := s.operatorProcessArgs(op, hosts)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own, so the operator outlives this command and a
	// Ctrl-C in the terminal that ran `up` does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the operator: %w", err)
	}
	op.PID = cmd.Process.Pid
	st.Operator = op
	_ = cmd.Process.Release()
	if err := os.WriteFile(filepath.Join(s.dir, "operator.pid"), []byte(strconv.Itoa(op.PID)+"\n"), 0o600); err != nil {
		return "", err
	}

	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !processAlive(op.PID) {
			return false, fmt.Errorf("the operator exited; see %s", filepath.Join(s.dir, "operator.log"))
		}
		return healthy(ctx, op.HealthAddr) && webhookServing(ctx, pool, op.WebhookPort), nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("pid %d, webhooks on %s, log %s", op.PID, webhookURL(op.WebhookPort, ""), filepath.Join(s.dir, "operator.log")), nil
}

// portFree tells whether a TCP port can be bound on every interface, as the
// webhook server binds it.
func portFree(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// healthy tells whether the operator's readiness probe answers 200.
func healthy(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// processAlive tells whether a process exists and has not exited. A zombie
// counts as gone: it is only waiting for its parent to collect it.
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is wrapped in parentheses.
	for i := len(raw) - 1; i > 0; i-- {
		if raw[i] == ')' && i+2 < len(raw) {
			return raw[i+2] != 'Z'
		}
	}
	return true
}

// stopProcess sends SIGTERM, waits up to grace, then kills.
func stopProcess(pid int, grace time.Duration) error {
	if !processAlive(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !processAlive(pid) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	if processAlive(pid) {
		return fmt.Errorf("process %d survived SIGKILL", pid)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// indent prefixes every line a subprocess prints, so its output nests under
// the step that runs it.
func indent(w io.Writer) io.Writer { return &prefixWriter{w: w, prefix: []byte("      | "), bol: true} }

type prefixWriter struct {
	w      io.Writer
	prefix []byte
	bol    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for _, c := range b {
		if p.bol {
			if _, err := p.w.Write(p.prefix); err != nil {
				return 0, err
			}
			p.bol = false
		}
		if _, err := p.w.Write([]byte{c}); err != nil {
			return 0, err
		}
		if c == '\n' {
			p.bol = true
		}
	}
	return len(b), nil
}

// operatorProcessArgs are the flags of a process-mode operator: the chart's,
// with the addresses picked for this host.
func (s *Stack) operatorProcessArgs(op *operatorState, keystoneHosts []string) []string {
	args := []string{
		"--kubeconfig=" + s.operatorKubeconfigPath(),
		"--leader-election-namespace=" + OperatorNamespace,
		"--metrics-bind-address=" + op.MetricsAddr,
		"--health-probe-bind-address=" + op.HealthAddr,
		"--clusters-namespace=" + clustersNamespace,
		"--watch-namespaces=" + testenv.WorkloadNamespace,
		// The certificate in the cert dir is signed by the devstack CA,
		// which installWebhooks hands the apiserver as the caBundle. The
		// server binds every interface; the apiserver dials loopback.
		"--enable-webhooks=true",
		"--webhook-cert-dir=" + s.webhookCertDir(),
		"--webhook-port=" + strconv.Itoa(op.WebhookPort),
	}
	if len(keystoneHosts) > 0 {
		args = append(args, "--allowed-keystone-hosts="+strings.Join(keystoneHosts, ","))
	}
	return args
}

// allowedKeystoneHosts is the operator's --allowed-keystone-hosts: the
// Keystone the sample ControlPlane declares, which the guide's standalone
// Nova names too. Without the OpenStack services that Keystone is a
// placeholder nothing dials, but the ControlPlane is admitted only with it.
func (s *Stack) allowedKeystoneHosts() ([]string, error) {
	var cloud *sampleCloud
	if s.openstack {
		var err error
		if cloud, err = s.loadSampleCloud(); err != nil {
			return nil, err
		}
	}
	// The internal URL is plain http on loopback, which an entry admits
	// only when written http://; the public one is https.
	ks := sampleControlPlane(cloud).Spec.Services.Keystone
	return keystonepolicy.EntriesFor(ks.InternalEndpoint, ks.PublicEndpoint)
}
