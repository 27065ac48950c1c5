package metadataintegration

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/dev/vmtest"
)

// readMetadata curls the metadata service from the instance until it
// answers through the whole path: the agent provisions the network's
// namespace and haproxy only once it sees the port bound to its chassis.
func readMetadata(ctx context.Context, t *testing.T, r *podrunner.Runner, agent *corev1.Pod, vm *vmtest.Instance, stub *novaStub) {
	t.Helper()
	var body string
	waitFor(ctx, t, "the instance to read its metadata", 3*time.Minute, func() (bool, string) {
		out, err := vm.Curl(ctx, "/openstack/latest/meta_data.json")
		if err != nil {
			return false, err.Error()
		}
		body = out
		return true, ""
	}, func() string { return "agent log:\n" + logTail(r, agent, "metadata-agent") })
	if !strings.Contains(body, `"path":"/openstack/latest/meta_data.json"`) || stub.last() == nil {
		t.Fatalf("the metadata answer did not come from the stand-in: %s", body)
	}
	t.Logf("the instance read %s", strings.TrimSpace(body))
}

// checkSigned checks what the agent sent Nova: the instance and project of
// the port, the instance's address, and the signature Nova verifies.
func checkSigned(t *testing.T, h http.Header, instanceID string, port *ports.Port, secret string) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Instance-ID":           instanceID,
		"X-Tenant-ID":             port.ProjectID,
		"X-Forwarded-For":         port.FixedIPs[0].IPAddress,
		"X-Instance-ID-Signature": signature(secret, instanceID),
	} {
		if got := h.Get(name); got != want {
			t.Errorf("the agent sent %s %q, want %q", name, got, want)
		}
	}
}

// checkSecretNowhereElse checks that the shared secret, which reached the
// agent through its environment as the signature shows, is nowhere else:
// not in its command line, in a file the runner wrote for the pod, or in
// the agent's log. The environment itself cannot be read back: the agent
// sets its process title over it.
func checkSecretNowhereElse(t *testing.T, r *podrunner.Runner, agent *corev1.Pod, secret string) {
	t.Helper()
	pid := containerPID(t, agent, "metadata-agent")
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), secret) {
		t.Error("the agent's command line holds the shared secret")
	}
	for _, dir := range []string{r.PodDir(agent), "/run/anvil-podrunner"} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil //nolint:nilerr // a file that went away holds nothing
			}
			if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), secret) {
				t.Errorf("%s holds the shared secret", p)
			}
			return nil
		})
	}
}

// waitContainerRunning waits until the container of the named pod runs
// after at least restarts restarts, and returns the pod.
func waitContainerRunning(ctx context.Context, t *testing.T, c *testenv.Cluster, r *podrunner.Runner, name, container string, restarts int32) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	waitFor(ctx, t, "container "+container+" of "+name+" to run", 3*time.Minute, func() (bool, string) {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return false, err.Error()
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == container && s.State.Running != nil && s.RestartCount >= restarts {
				return true, ""
			}
		}
		return false, "phase " + string(pod.Status.Phase)
	}, func() string {
		var b strings.Builder
		for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
			b.WriteString(s.Name + ": " + stateOf(s) + "\n" + logTail(r, pod, s.Name) + "\n")
		}
		return b.String()
	})
	return pod
}

// stateOf describes a container's state for a failure message.
func stateOf(s corev1.ContainerStatus) string {
	switch {
	case s.State.Waiting != nil:
		return "waiting: " + s.State.Waiting.Reason + " " + s.State.Waiting.Message
	case s.State.Terminated != nil:
		return "terminated: " + strconv.Itoa(int(s.State.Terminated.ExitCode)) + " " + s.State.Terminated.Message
	default:
		return "running"
	}
}

// containerPID is the process of a running container.
func containerPID(t *testing.T, pod *corev1.Pod, container string) int {
	t.Helper()
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			if pid, err := strconv.Atoi(strings.TrimPrefix(s.ContainerID, "process://")); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("container %s of %s has no process", container, pod.Name)
	return 0
}

// killContainer kills a container's process group, as a crash would.
func killContainer(t *testing.T, pod *corev1.Pod, container string) {
	t.Helper()
	if err := syscall.Kill(-containerPID(t, pod, container), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls ok every second until it holds; on a timeout it fails
// with the last reason and what the optional details say.
func waitFor(ctx context.Context, t *testing.T, what string, timeout time.Duration, ok func() (bool, string), details ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			var more []string
			for _, d := range details {
				more = append(more, d())
			}
			t.Fatalf("waited %s for %s; last: %s\n%s", timeout, what, last, strings.Join(more, "\n"))
		}
		time.Sleep(time.Second)
	}
}
