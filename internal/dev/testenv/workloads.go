package testenv

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/provisioner"
)

// FakeNodeAnnotation marks the Nodes the test kwok manages. Nodes without it
// are left alone, so a test can still create a Node that never turns Ready.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

//go:embed stages.yaml
var kwokStages []byte

// Node describes a fake node to create.
type Node struct {
	// Name is the node's name.
	Name string
	// Labels are set on the node in addition to kubernetes.io/hostname.
	Labels map[string]string
}

// workloads are the processes that make a bare apiserver schedule and run
// pods: the controller manager, the scheduler and kwok as a fake kubelet,
// plus the volume provisioner, which runs in this process.
type workloads struct {
	procs []*process
	// stopProvisioner ends the provisioner's informers.
	stopProvisioner context.CancelFunc
}

// process is one child process with its log file.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartWorkloads starts kube-controller-manager, kube-scheduler and kwok
// against c, creates the given fake nodes and waits until they are Ready. It
// is idempotent for the processes; nodes that exist are left as they are.
func (c *Cluster) StartWorkloads(ctx context.Context, nodes ...Node) error {
	if c.workloads == nil {
		w, err := c.startWorkloads()
		if err != nil {
			return err
		}
		c.workloads = w
		// Claims need volumes before the scheduler places their pods; it
		// lives as long as the other workloads, not as long as ctx.
		pctx, cancel := context.WithCancel(context.Background())
		w.stopProvisioner = cancel
		if err := provisioner.Start(pctx, c.Config); err != nil {
			return fmt.Errorf("starting the volume provisioner: %w", err)
		}
	}
	return c.CreateNodes(ctx, nodes...)
}

func (c *Cluster) startWorkloads() (*workloads, error) {
	stages := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
		return nil, err
	}
	kc := c.KubeconfigPath
	// The token controller fills service-account token Secrets, signed with
	// the key the apiserver verifies; its CA bundle is the serving CA.
	rootCA := filepath.Join(c.dir, "serving-ca.crt")
	if err := os.WriteFile(rootCA, c.Config.CAData, 0o600); err != nil {
		return nil, err
	}
	ports, err := netutil.FreeLoopbackPorts(3)
	if err != nil {
		return nil, err
	}
	specs := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0]),
			"--cert-dir=" + filepath.Join(c.dir, "kcm-certs"),
			"--service-account-private-key-file=" + filepath.Join(c.CertDir(), "sa-signer.key"),
			"--root-ca-file=" + rootCA,
			// Tests create and delete quickly; react without the production delays.
			"--concurrent-daemonset-syncs=5", "--concurrent-job-syncs=5",
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[1]),
			"--cert-dir=" + filepath.Join(c.dir, "scheduler-certs"),
		}},
		{"kwok", []string{
			"--kubeconfig=" + kc, "--config=" + stages,
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
			"--node-lease-duration-seconds=40", "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
			"--server-address=127.0.0.1:" + strconv.Itoa(ports[2]),
		}},
	}
	w := &workloads{}
	for _, s := range specs {
		p, err := startProcess(filepath.Join(c.binDir, s.name), s.name, filepath.Join(c.dir, s.name+".log"), s.args)
		if err != nil {
			_ = w.stop()
			return nil, err
		}
		w.procs = append(w.procs, p)
	}
	return w, nil
}

// CreateNodes creates fake nodes that the cluster's kwok manages and waits
// until every one of them reports Ready.
func (c *Cluster) CreateNodes(ctx context.Context, nodes ...Node) error {
	for _, n := range nodes {
		labels := map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux"}
		maps.Copy(labels, n.Labels)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{FakeNodeAnnotation: "fake"},
		}}
		if err := c.Client.Create(ctx, node); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating node %s on %s: %w", n.Name, c.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
				return false, nil //nolint:nilerr // not there yet; poll again
			}
			if !nodeReady(node) {
				return false, nil
			}
		}
		return true, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WorkloadLogs returns the paths of the workload processes' logs, for a
// test to print when something does not converge.
func (c *Cluster) WorkloadLogs() []string {
	if c.workloads == nil {
		return nil
	}
	logs := make([]string, 0, len(c.workloads.procs))
	for _, p := range c.workloads.procs {
		logs = append(logs, filepath.Join(c.dir, p.name+".log"))
	}
	return logs
}

func startProcess(path, name, logPath string, args []string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), singleProc)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so a signal to the test's terminal does not
	// reach it before the harness has stopped it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop terminates every process, newest first, and waits for each.
func (w *workloads) stop() error {
	if w.stopProvisioner != nil {
		w.stopProvisioner()
	}
	var errs []error
	for i := len(w.procs) - 1; i >= 0; i-- {
		p := w.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			errs = append(errs, fmt.Errorf("%s did not stop on SIGTERM and was killed", p.name))
		}
	}
	return errors.Join(errs...)
}
