package podrunner

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// controlPlaneNode is the node of TestIntegrationNovaMetadata's runner; it
// is not one of integrationNodes, whose runner is gone by then.
const controlPlaneNode = "compute-a-ctl-1"

// TestIntegrationNovaMetadata runs the contract's nova-metadata container
// through a runner that has the control-plane mappings, against the Debian
// Nova of this host: a nova-manage pod first creates the database the
// metadata service registers itself in (SQLite, so that no database server
// is needed), then the metadata pod must answer on its port, under its pod
// name, and stop when the pod is deleted; so must a nova-novncproxy pod.
func TestIntegrationNovaMetadata(t *testing.T) {
	e := testenv.Require(t, env)
	for _, p := range []string{UWSGIPath, NovaMetadataWSGIPath, NovaManagePath, DefaultAPIPasteConfig} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Debian's Nova is not installed: %v", err)
		}
	}
	c := e.ComputeCluster("compute-a")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := startControlPlaneRunner(ctx, t, c)

	db := filepath.Join(t.TempDir(), "nova.sqlite")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nova-cp-config", Namespace: testenv.WorkloadNamespace},
		StringData: map[string]string{"nova.conf": strings.Join([]string{
			"[DEFAULT]",
			// No bus runs; the metadata API does not reach it to list
			// its versions.
			"transport_url = rabbit://nova:" + cpPassword + "@127.0.0.1:1/",
			"[database]",
			"connection = sqlite:///" + db,
			"[wsgi]",
			"api_paste_config = " + DefaultAPIPasteConfig,
			"",
		}, "\n")},
	}
	if err := c.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	sync := controlPlanePod("nova-cp-db-sync", secret.Name, corev1.Container{
		Name:    "db-sync",
		Image:   cpImage,
		Command: []string{"nova-manage", "--config-file", cpConfig, "db", "sync", "--local_cell"},
	})
	if err := c.Client.Create(ctx, sync); err != nil {
		t.Fatal(err)
	}
	done := waitForPod(ctx, t, c, sync.Name, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("db sync: %s\n%s", done.Status.Phase, containerLogTail(r, done, "db-sync"))
	}

	port := freePort(t)
	spec := cpWSGIContainer("nova-metadata", strconv.Itoa(port), "/usr/bin/nova-metadata-wsgi")
	spec.Env = spec.Env[:2] // the contract's two variables; no Secret reference
	spec.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
	pod := controlPlanePod("nova-cp-metadata", secret.Name, spec)
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := waitForPod(ctx, t, c, pod.Name, "Running", podPhaseIs(corev1.PodRunning))
	if a := running.Annotations[AnnotationPodRunner]; a != PodRunnerProcess {
		t.Errorf("annotation = %q, want %q", a, PodRunnerProcess)
	}
	url := fmt.Sprintf("http://%s:%d/", HostIP, port)
	got, err := waitAnswer(ctx, url, time.Minute, func(a httpAnswer, err error) bool { return err == nil && a.status == http.StatusOK })
	if err != nil || !strings.Contains(got.body, "latest") {
		t.Fatalf("GET %s = %+v, %v\n%s", url, got, err, containerLogTail(r, running, "nova-metadata"))
	}
	if hosts := serviceHosts(t, db, "nova-metadata"); hosts != pod.Name {
		t.Errorf("nova-metadata registered as host %q, want the pod name %q", hosts, pod.Name)
	}
	stopAndCheck(ctx, t, c, running, url)

	testNoVNCProxy(ctx, t, c, r, secret.Name)
}

// testNoVNCProxy runs the contract's nova-novncproxy container: websockify
// must answer on the container's port. This host has no noVNC, so the
// answer is a 404 for the missing HTML page; what matters is that the proxy
// runs and listens where the pod says.
func testNoVNCProxy(ctx context.Context, t *testing.T, c *testenv.Cluster, r *Runner, secret string) {
	port := freePort(t)
	spec := cpContainer("nova-novncproxy")
	spec.Ports = []corev1.ContainerPort{{Name: "vnc", ContainerPort: int32(port)}}
	pod := controlPlanePod("nova-cp-novncproxy", secret, spec)
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := waitForPod(ctx, t, c, pod.Name, "Running", podPhaseIs(corev1.PodRunning))
	url := fmt.Sprintf("http://%s:%d/", HostIP, port)
	got, err := waitAnswer(ctx, url, time.Minute, answers)
	if err != nil || !strings.Contains(got.server, "WebSockify") {
		t.Fatalf("GET %s = %+v, %v\n%s", url, got, err, containerLogTail(r, running, "nova-novncproxy"))
	}
	stopAndCheck(ctx, t, c, running, url)
}

// stopAndCheck deletes a running pod and checks that its process exits and
// its port goes quiet.
func stopAndCheck(ctx context.Context, t *testing.T, c *testenv.Cluster, running *corev1.Pod, url string) {
	t.Helper()
	pid := pidOf(running.Status.ContainerStatuses[0].ContainerID)
	if err := c.Client.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	if !gone(pid, 30*time.Second) {
		t.Errorf("%s: process %d still runs after the pod was deleted", running.Name, pid)
	}
	if _, err := waitAnswer(ctx, url, 10*time.Second, silent); err != nil {
		t.Errorf("%s still answers after the pod was deleted", url)
	}
}

// startControlPlaneRunner starts a runner with the control-plane mappings
// in front of the default ones, stopped when the test ends.
func startControlPlaneRunner(ctx context.Context, t *testing.T, c *testenv.Cluster) *Runner {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	r, err := New(Options{
		Config:   c.Config,
		Nodes:    []Node{{Name: controlPlaneNode}},
		StateDir: t.TempDir(),
		Images:   append(NovaControlPlaneMappings(), DefaultImageMap()...),
		Logger:   testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(runCtx); err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if err := r.Wait(); err != nil {
			t.Errorf("runner: %v", err)
		}
	})
	return r
}

// controlPlanePod returns a pod bound to controlPlaneNode whose container
// mounts the config Secret at the contract's path.
func controlPlanePod(name, secret string, container corev1.Container) *corev1.Pod {
	grace := int64(5)
	container.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: cpConfigDir, ReadOnly: true}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace},
		Spec: corev1.PodSpec{
			NodeName:                      controlPlaneNode,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{container},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: secret},
			}}},
		},
	}
}

// freePort returns a loopback port that nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(HostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpAnswer is what a loopback server answered.
type httpAnswer struct {
	status int
	server string
	body   string
}

// httpGet returns the answer of url; an error means nothing answered.
func httpGet(ctx context.Context, url string) (httpAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return httpAnswer{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return httpAnswer{status: resp.StatusCode, server: resp.Header.Get("Server"), body: string(data)}, err
}

// waitAnswer polls url until ok holds for its answer, and returns the last
// answer.
func waitAnswer(ctx context.Context, url string, timeout time.Duration, ok func(httpAnswer, error) bool) (httpAnswer, error) {
	var last httpAnswer
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		a, err := httpGet(ctx, url)
		last = a
		return ok(a, err), nil
	})
	return last, err
}

// answers and silent are conditions for waitAnswer.
func answers(_ httpAnswer, err error) bool { return err == nil }
func silent(_ httpAnswer, err error) bool  { return err != nil }

// serviceHosts returns the hosts under which binary is registered in the
// SQLite database, comma-separated, read with the system Python, which has
// SQLite built in.
func serviceHosts(t *testing.T, db, binary string) string {
	t.Helper()
	script := "import sqlite3, sys\n" +
		"rows = sqlite3.connect(sys.argv[1]).execute('select host from services where binary = ? order by host', (sys.argv[2],))\n" +
		"print(','.join(r[0] for r in rows))\n"
	out, err := exec.Command(PythonPath, "-c", script, db, binary).CombinedOutput()
	if err != nil {
		t.Fatalf("reading the services table: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// containerLogTail returns the end of a container's log, for failures.
func containerLogTail(r *Runner, pod *corev1.Pod, container string) string {
	data, err := os.ReadFile(r.ContainerLog(pod, container))
	if err != nil {
		return err.Error()
	}
	return tailLines(string(data), 30)
}
