package podrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var (
	env   *testenv.Environment
	cloud *openstacktest.Cloud
)

// TestMain starts compute-a and the real OpenStack services; the nova-compute
// subtest registers a host in that Nova.
func TestMain(m *testing.M) {
	// The runner's own service tests are a long suite: make test's
	// controller suites run their pods through it, which is its short
	// version there.
	if testenv.SkipsLongSuites() {
		os.Exit(testenv.Run(m, testenv.Options{Long: "test-all"}, &env))
	}
	os.Exit(openstacktest.RunWithNova(&cloud, func() int {
		return testenv.Run(m, testenv.Options{ComputeClusters: 1}, &env)
	}))
}

// The runner's nodes in the integration tests.
var integrationNodes = []Node{
	{Name: "compute-a-hv-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-1"}},
	{Name: "compute-a-hv-2", Labels: map[string]string{corev1.LabelTopologyZone: "zone-2"}},
}

// TestIntegrationPodRunner runs one runner against compute-a and takes pods
// through it; the subtests share the runner and run in order.
func TestIntegrationPodRunner(t *testing.T) {
	e := testenv.Require(t, env)
	cloud := openstacktest.Require(t, cloud)
	c := e.ComputeCluster("compute-a")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	runCtx, stop := context.WithCancel(ctx)
	r, err := New(Options{
		Config:   c.Config,
		Nodes:    integrationNodes,
		StateDir: t.TempDir(),
		Images:   testImages(),
		// The processes trust the cloud's Keystone CA as a node trusts
		// its cloud's CA.
		Env:    map[string]string{"REQUESTS_CA_BUNDLE": cloud.Endpoints["ANVIL_OPENSTACK_KEYSTONE_CA"]},
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if err := r.Wait(); err != nil {
			t.Errorf("runner: %v", err)
		}
	})

	t.Run("nodes are registered and Ready", func(t *testing.T) { testNodesReady(ctx, t, c) })
	t.Run("a mapped pod runs and succeeds", func(t *testing.T) { testProcessPodSucceeds(ctx, t, c, r) })
	t.Run("a failing command fails the pod", func(t *testing.T) { testProcessPodFails(ctx, t, c) })
	t.Run("an unmapped image is simulated", func(t *testing.T) { testSimulatedPod(ctx, t, c) })
	t.Run("deleting a pod stops its process", func(t *testing.T) { testDeleteStopsProcess(ctx, t, c, r) })
	t.Run("a nova-compute pod registers its node in Nova", func(t *testing.T) { testNovaCompute(ctx, t, c, r, cloud) })
	t.Run("a scheduled Job runs on the runner's nodes", func(t *testing.T) { testScheduledJob(ctx, t, c) })
	t.Run("a DaemonSet runs a process on every node", func(t *testing.T) { testDaemonSet(ctx, t, c) })
}

func testNodesReady(ctx context.Context, t *testing.T, c *testenv.Cluster) {
	for _, n := range integrationNodes {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		if got := node.Labels[corev1.LabelTopologyZone]; got != n.Labels[corev1.LabelTopologyZone] {
			t.Errorf("%s zone = %q, want %q", n.Name, got, n.Labels[corev1.LabelTopologyZone])
		}
		if got := node.Labels[corev1.LabelHostname]; got != n.Name {
			t.Errorf("%s hostname label = %q", n.Name, got)
		}
		if !isNodeReady(node) {
			t.Errorf("%s is not Ready: %+v", n.Name, node.Status.Conditions)
		}
		if len(node.Spec.Taints) != 0 || node.Spec.Unschedulable {
			t.Errorf("%s is tainted or unschedulable: %+v", n.Name, node.Spec)
		}
		if _, ok := node.Annotations[testenv.FakeNodeAnnotation]; ok {
			t.Errorf("%s carries kwok's annotation; kwok would take it over", n.Name)
		}
		// The lease is what keeps the node Ready once a controller manager
		// watches it.
		lease := &coordinationv1.Lease{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n.Name}, lease); err != nil {
			t.Errorf("lease of %s: %v", n.Name, err)
		}
	}
}

func isNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// newPod returns a pod bound to the first runner node; there is no
// scheduler, so the test binds it.
func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	grace := int64(2)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace},
		Spec: corev1.PodSpec{
			NodeName:                      integrationNodes[0].Name,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    containers,
		},
	}
}

// waitForPod polls a pod until ok holds and returns it.
func waitForPod(ctx context.Context, t *testing.T, c *testenv.Cluster, name string, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: name}, pod); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return ok(pod), nil
	})
	if err != nil {
		t.Fatalf("pod %s did not become %s: %v; last: phase %s, statuses %+v", name, what, err, pod.Status.Phase, pod.Status.ContainerStatuses)
	}
	return pod
}

func podPhaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == phase }
}

func testProcessPodSucceeds(ctx context.Context, t *testing.T, c *testenv.Cluster, r *Runner) {
	const secretValue = "integration-s3cret"
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "runner-creds", Namespace: testenv.WorkloadNamespace},
		Data:       map[string][]byte{"password": []byte(secretValue), "other": []byte("unused")},
	}
	if err := c.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	container := corev1.Container{
		Name:  "writer",
		Image: testShellImage + ":1",
		// It waits for a file the test creates, so that the test sees the
		// pod Running before it completes.
		Args: []string{`echo "$PASSWORD|$NODE|$HOST_IP|$POD" > env.txt && cat /etc/creds/password > secret.txt && while [ ! -e go ]; do sleep 0.1; done; exit 0`},
		Env: []corev1.EnvVar{
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "password"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds", ReadOnly: true}},
	}
	pod := newPod("runs-a-process", container)
	pod.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret.Name, Items: []corev1.KeyToPath{{Key: "password", Path: "password"}},
	}}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	running := waitForPod(ctx, t, c, pod.Name, "Running", podPhaseIs(corev1.PodRunning))
	if got := running.Annotations[AnnotationPodRunner]; got != PodRunnerProcess {
		t.Errorf("annotation = %q, want %q", got, PodRunnerProcess)
	}
	cs := running.Status.ContainerStatuses[0]
	if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() || !cs.Ready || pidOf(cs.ContainerID) == 0 {
		t.Errorf("container status = %+v", cs)
	}
	if running.Status.HostIP != HostIP || running.Status.PodIP != HostIP {
		t.Errorf("addresses: host %q pod %q", running.Status.HostIP, running.Status.PodIP)
	}

	work := filepath.Join(r.PodDir(running), containersDirName, container.Name)
	// Files appear before the go file is there, so they can be read now.
	envOut := waitForFile(t, filepath.Join(work, "env.txt"))
	want := fmt.Sprintf("%s|%s|%s|%s\n", secretValue, integrationNodes[0].Name, HostIP, pod.Name)
	if envOut != want {
		t.Errorf("env.txt = %q, want %q", envOut, want)
	}
	if got := waitForFile(t, filepath.Join(work, "secret.txt")); got != secretValue {
		t.Errorf("secret.txt = %q, want %q", got, secretValue)
	}
	mounted := filepath.Join(r.PodDir(running), volumesDirName, "creds", "password")
	if fi, err := os.Stat(mounted); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mounted secret file: %v, %v", fi, err)
	}
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	done := waitForPod(ctx, t, c, pod.Name, "Succeeded", podPhaseIs(corev1.PodSucceeded))
	term := done.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != reasonCompleted {
		t.Errorf("terminated = %+v", term)
	}
	// Neither the pod nor its events may carry the Secret's value.
	if strings.Contains(done.String(), secretValue) {
		t.Error("the pod object carries the secret value")
	}
	events := &corev1.EventList{}
	if err := c.Client.List(ctx, events, client.InNamespace(testenv.WorkloadNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Message, secretValue) {
			t.Errorf("event %s carries the secret value", ev.Name)
		}
	}
}

// waitForFile waits for a file a process writes and returns its content
// once it ends with a newline or stops changing.
func waitForFile(t *testing.T, path string) string {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path)
		if err == nil && len(data) > 0 && string(data) == last {
			return last
		}
		last = string(data)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s was not written", path)
	return ""
}

func testProcessPodFails(ctx context.Context, t *testing.T, c *testenv.Cluster) {
	pod := newPod("fails-with-3", corev1.Container{Name: "fail", Image: testShellImage, Args: []string{"echo failing >&2; exit 3"}})
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := waitForPod(ctx, t, c, pod.Name, "Failed", podPhaseIs(corev1.PodFailed))
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != reasonError {
		t.Errorf("terminated = %+v", term)
	}
}

func testSimulatedPod(ctx context.Context, t *testing.T, c *testenv.Cluster) {
	pod := newPod("simulated", corev1.Container{Name: "probe", Image: "example.invalid/probe:1"})
	pod.Spec.NodeName = integrationNodes[1].Name
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := waitForPod(ctx, t, c, pod.Name, "Running and Ready", func(p *corev1.Pod) bool {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return p.Status.Phase == corev1.PodRunning
			}
		}
		return false
	})
	if a := got.Annotations[AnnotationPodRunner]; a != PodRunnerSimulated {
		t.Errorf("annotation = %q, want %q", a, PodRunnerSimulated)
	}
	if id := got.Status.ContainerStatuses[0].ContainerID; !strings.HasPrefix(id, "simulated://") {
		t.Errorf("container ID = %q", id)
	}
}

func testDeleteStopsProcess(ctx context.Context, t *testing.T, c *testenv.Cluster, r *Runner) {
	pod := newPod("long-running", corev1.Container{Name: "loop", Image: testShellImage, Args: []string{"while :; do sleep 0.2; done"}})
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := waitForPod(ctx, t, c, pod.Name, "Running", podPhaseIs(corev1.PodRunning))
	pid := pidOf(running.Status.ContainerStatuses[0].ContainerID)
	if pid == 0 || !alive(pid) {
		t.Fatalf("no live process behind %q", running.Status.ContainerStatuses[0].ContainerID)
	}
	dir := r.PodDir(running)

	if err := c.Client.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	if !gone(pid, 30*time.Second) {
		t.Fatalf("process %d still runs after the pod was deleted", pid)
	}
	// The runner removes the pod from the API once its grace period passed.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Errorf("the pod was not removed: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("work directory %s remains: %v", dir, err)
	}
}

func testScheduledJob(ctx context.Context, t *testing.T, c *testenv.Cluster) {
	// The controller manager and scheduler make Jobs and DaemonSets work;
	// kwok starts too but leaves the runner's nodes alone.
	if err := c.StartWorkloads(ctx); err != nil {
		t.Fatalf("starting workloads: %v (logs %v)", err, c.WorkloadLogs())
	}
	backoff := int32(0)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduled", Namespace: testenv.WorkloadNamespace},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{corev1.LabelTopologyZone: "zone-2"},
				Containers:    []corev1.Container{{Name: "work", Image: testShellImage, Args: []string{`test "$NODE" = compute-a-hv-2`}, Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}}},
			}},
		},
	}
	if err := c.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err
		}
		return job.Status.Succeeded == 1 || job.Status.Failed > 0, nil
	})
	if err != nil || job.Status.Succeeded != 1 {
		t.Fatalf("job status %+v, err %v (logs %v)", job.Status, err, c.WorkloadLogs())
	}
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(testenv.WorkloadNamespace), client.MatchingLabels{"job-name": job.Name}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("job pods = %d, want 1", len(pods.Items))
	}
	if p := pods.Items[0]; p.Spec.NodeName != "compute-a-hv-2" || p.Annotations[AnnotationPodRunner] != PodRunnerProcess {
		t.Errorf("job pod on %s with annotations %v", p.Spec.NodeName, p.Annotations)
	}
}

// testNovaCompute runs a nova-compute pod configured from a Secret at the
// contract's mount path, against the real Nova: the pod's process registers
// its host under the node's name, and deleting the pod stops it.
func testNovaCompute(ctx context.Context, t *testing.T, c *testenv.Cluster, r *Runner, cloud *openstacktest.Cloud) {
	node := integrationNodes[0].Name
	cl, nova := cloud.ForTest(t)
	cl.ComputeService(node)
	// A record left by an earlier run must not pass for this pod's. Nova
	// cannot delete a service whose node never reached Placement, so the
	// registration below is proven by the resource provider, which only a
	// running nova-compute creates.
	stale, err := nova.ListComputeServices(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range stale {
		if err := nova.DeleteService(ctx, svc.ID); err != nil {
			t.Logf("removing an earlier run's service of %s: %v", node, err)
		}
	}
	if rps, err := nova.ListResourceProviders(ctx, node); err != nil || len(rps) != 0 {
		t.Fatalf("before the pod runs, providers of %s = %+v, %v", node, rps, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nova-compute-config", Namespace: testenv.WorkloadNamespace},
		Data:       computeConfig(t, cloud, "/etc/nova/compute-config"),
	}
	if err := c.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	pod := newPod("nova-compute-hv-1", corev1.Container{
		Name:         "nova-compute",
		Image:        "quay.io/c5c3/nova:2026.1",
		Command:      []string{"nova-compute"},
		VolumeMounts: []corev1.VolumeMount{{Name: "compute-config", MountPath: "/etc/nova/compute-config", ReadOnly: true}},
	})
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.Volumes = []corev1.Volume{{Name: "compute-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name}}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := waitForPod(ctx, t, c, pod.Name, "Running", podPhaseIs(corev1.PodRunning))
	if a := running.Annotations[AnnotationPodRunner]; a != PodRunnerProcess {
		t.Errorf("annotation = %q", a)
	}
	pid := pidOf(running.Status.ContainerStatuses[0].ContainerID)
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	dir := r.PodDir(running)
	overrides := filepath.Join(dir, containersDirName, "nova-compute", OverridesFile)
	want := []string{
		PythonPath, "-c", NovaComputeLauncher,
		"--config-file", filepath.Join(dir, volumesDirName, "compute-config", "nova-compute.conf"),
		"--config-file", overrides,
	}
	if got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("argv = %q\nwant %q", got, want)
	}
	conf, err := os.ReadFile(overrides)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"host = " + integrationNodes[0].Name,
		"compute_driver = " + FakeComputeDriver,
		"ssl_ca_file = " + filepath.Join(dir, volumesDirName, "compute-config", "ca.crt"),
	} {
		if !strings.Contains(string(conf), line+"\n") {
			t.Errorf("the generated configuration lacks %q:\n%s", line, conf)
		}
	}
	// The real Nova lists the node's host once its service reports in over
	// the TLS bus, and Placement has its provider once it authenticated at
	// the https Keystone.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		svcs, err := nova.ListComputeServices(ctx, node)
		if err != nil || len(svcs) != 1 || svcs[0].State != "up" {
			return false, nil //nolint:nilerr // the API may be busy; poll again
		}
		rps, err := nova.ListResourceProviders(ctx, node)
		return err == nil && len(rps) == 1, nil
	})
	if err != nil {
		data, _ := os.ReadFile(r.ContainerLog(running, "nova-compute"))
		t.Fatalf("nova-compute of %s did not register in Nova: %v\n%s", node, err, tailLines(string(data), 30))
	}

	if err := c.Client.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	if !gone(pid, 30*time.Second) {
		t.Fatalf("nova-compute %d still runs after the pod was deleted", pid)
	}
}

// testDaemonSet needs the controller manager and scheduler that
// testScheduledJob started.
func testDaemonSet(ctx context.Context, t *testing.T, c *testenv.Cluster) {
	labels := map[string]string{"app": "runner-daemon"}
	grace := int64(1)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "runner-daemon", Namespace: testenv.WorkloadNamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []corev1.Container{{Name: "daemon", Image: testShellImage, Args: []string{"while :; do sleep 0.5; done"}}},
				},
			},
		},
	}
	if err := c.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(testenv.WorkloadNamespace), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Annotations[AnnotationPodRunner] == PodRunnerProcess {
				running[p.Spec.NodeName] = true
			}
		}
		return running[integrationNodes[0].Name] && running[integrationNodes[1].Name], nil
	})
	if err != nil {
		t.Fatalf("the DaemonSet's processes did not run on both nodes: %v (logs %v)", err, c.WorkloadLogs())
	}
}

// computeConfig derives a compute node's configuration from the services'
// own nova.conf, the way a remote contract looks: the TLS bus with its CA
// mounted at mountDir, the https Keystone, and no database.
func computeConfig(t *testing.T, cloud *openstacktest.Cloud, mountDir string) map[string][]byte {
	t.Helper()
	raw, err := os.ReadFile(cloud.Endpoints["ANVIL_OPENSTACK_NOVA_CONF"])
	if err != nil {
		t.Fatal(err)
	}
	busURL, err := cloud.TransportURL(true)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(cloud.Endpoints["ANVIL_OPENSTACK_RABBITMQ_CA"])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		key, _, _ := strings.Cut(line, "=")
		switch strings.TrimSpace(key) {
		case "connection":
			continue
		case "transport_url":
			line = "transport_url = " + busURL
		case "auth_url":
			line = "auth_url = " + cloud.Endpoints["ANVIL_OPENSTACK_KEYSTONE_PUBLIC_URL"]
		}
		out = append(out, line)
	}
	out = append(out, "", "[oslo_messaging_rabbit]", "ssl = true", "ssl_ca_file = "+mountDir+"/ca.crt", "")
	return map[string][]byte{"nova-compute.conf": []byte(strings.Join(out, "\n")), "ca.crt": ca}
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
