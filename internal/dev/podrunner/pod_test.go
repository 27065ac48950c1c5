package podrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// handlerFixture is a node handler without a cluster: it records what it
// would report to the pod controller.
type handlerFixture struct {
	h       *nodeHandler
	objects *objectStore
	mu      sync.Mutex
	last    map[string]*corev1.Pod
}

func newHandlerFixture(t *testing.T) *handlerFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &handlerFixture{objects: testObjects(), last: map[string]*corev1.Pod{}}
	f.h = newNodeHandler(ctx, "node-1", t.TempDir(), testImages(), f.objects, map[string]string{"EXTRA": "x"}, logr.Discard())
	f.h.NotifyPods(ctx, func(p *corev1.Pod) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.last[p.Namespace+"/"+p.Name] = p
	})
	t.Cleanup(func() {
		cancel()
		f.h.running.Wait()
	})
	return f
}

// waitPod waits until the last reported state of a pod satisfies ok.
func (f *handlerFixture) waitPod(t *testing.T, name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var p *corev1.Pod
	for time.Now().Before(deadline) {
		f.mu.Lock()
		p = f.last["ns/"+name]
		f.mu.Unlock()
		if p != nil && ok(p) {
			return p
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pod %s did not reach the expected state; last reported: %+v", name, p)
	return nil
}

func phaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == phase }
}

func testPod(name string, policy corev1.RestartPolicy, containers ...corev1.Container) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName: "node-1", RestartPolicy: policy, Containers: containers, TerminationGracePeriodSeconds: &grace,
		},
	}
}

func shell(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: testShellImage + ":1", Args: []string{script}}
}

func TestHandlerRunsAPodToCompletion(t *testing.T) {
	f := newHandlerFixture(t)
	c := shell("main", `echo "$PASSWORD $NODE $EXTRA $HOME" > env.txt; cp /etc/creds/password secret.txt; exit 0`)
	c.Env = []corev1.EnvVar{
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}}
	pod := testPod("done", corev1.RestartPolicyNever, c)
	pod.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}}
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "done", phaseIs(corev1.PodSucceeded))
	if got.Annotations[AnnotationPodRunner] != PodRunnerProcess {
		t.Errorf("annotation = %q", got.Annotations[AnnotationPodRunner])
	}
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != reasonCompleted || pidOf(term.ContainerID) == 0 {
		t.Fatalf("container state = %+v", got.Status.ContainerStatuses[0].State)
	}
	work := filepath.Join(f.h.podDir(pod), containersDirName, "main")
	env, err := os.ReadFile(filepath.Join(work, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "s3cret node-1 x " + work + "\n"; string(env) != want {
		t.Errorf("env.txt = %q, want %q", env, want)
	}
	if secret, _ := os.ReadFile(filepath.Join(work, "secret.txt")); string(secret) != "s3cret" {
		t.Errorf("secret.txt = %q", secret)
	}
	// The secret must not appear in what is reported.
	if strings.Contains(got.String(), "s3cret") {
		t.Error("the reported pod carries the secret value")
	}
}

func TestHandlerReportsFailureAndStartErrors(t *testing.T) {
	f := newHandlerFixture(t)
	if err := f.h.CreatePod(context.Background(), testPod("fails", corev1.RestartPolicyNever, shell("main", "exit 3"))); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "fails", phaseIs(corev1.PodFailed))
	if term := got.Status.ContainerStatuses[0].State.Terminated; term.ExitCode != 3 || term.Reason != reasonError {
		t.Errorf("terminated = %+v", term)
	}

	// A mapping whose program does not exist fails the container the way a
	// missing binary fails a container: StartError, 128.
	missing := testPod("missing", corev1.RestartPolicyNever, corev1.Container{Name: "manage", Image: "quay.io/c5c3/nova", Command: []string{"nova-manage", "db", "sync"}})
	f.h.images = ImageMap{{Name: "missing", Match: MatchImage("quay.io/c5c3/nova"), Build: func(Container) (Command, error) {
		return Command{Path: "/nonexistent/nova-manage"}, nil
	}}}
	if err := f.h.CreatePod(context.Background(), missing); err != nil {
		t.Fatal(err)
	}
	got = f.waitPod(t, "missing", phaseIs(corev1.PodFailed))
	if term := got.Status.ContainerStatuses[0].State.Terminated; term.ExitCode != 128 || term.Reason != reasonStartError {
		t.Errorf("terminated = %+v", term)
	}
}

func TestHandlerRestartsByPolicy(t *testing.T) {
	f := newHandlerFixture(t)
	// OnFailure: the first run fails, the second succeeds.
	flaky := testPod("flaky", corev1.RestartPolicyOnFailure, shell("main", `if [ -e ran ]; then exit 0; fi; touch ran; exit 1`))
	if err := f.h.CreatePod(context.Background(), flaky); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "flaky", phaseIs(corev1.PodSucceeded))
	cs := got.Status.ContainerStatuses[0]
	if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("status = %+v", cs)
	}

	// Always: a process that exits is started again, and the pod stays
	// Running.
	daemon := testPod("daemon", corev1.RestartPolicyAlways, shell("main", `exit 0`))
	if err := f.h.CreatePod(context.Background(), daemon); err != nil {
		t.Fatal(err)
	}
	got = f.waitPod(t, "daemon", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount >= 1 })
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", got.Status.Phase)
	}
}

func TestHandlerInitContainers(t *testing.T) {
	f := newHandlerFixture(t)
	pod := testPod("init", corev1.RestartPolicyNever, shell("main", `test -e initialised`))
	pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].Args = []string{"test -e /shared/initialised"}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	initC := shell("setup", "touch /shared/initialised")
	initC.VolumeMounts = pod.Spec.Containers[0].VolumeMounts
	pod.Spec.InitContainers = []corev1.Container{initC, {Name: "simulated", Image: "example.invalid/noop"}}
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "init", phaseIs(corev1.PodSucceeded))
	for _, s := range got.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Errorf("init %s = %+v", s.Name, s.State)
		}
	}

	failing := testPod("init-fails", corev1.RestartPolicyNever, shell("main", "touch ran"))
	failing.Spec.InitContainers = []corev1.Container{shell("setup", "exit 4")}
	if err := f.h.CreatePod(context.Background(), failing); err != nil {
		t.Fatal(err)
	}
	got = f.waitPod(t, "init-fails", phaseIs(corev1.PodFailed))
	if got.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 4 {
		t.Errorf("init status = %+v", got.Status.InitContainerStatuses[0])
	}
	if _, err := os.Stat(filepath.Join(f.h.podDir(failing), containersDirName, "main", "ran")); err == nil {
		t.Error("the container ran although its init container failed")
	}
}

func TestHandlerWaitsForMissingSecret(t *testing.T) {
	f := newHandlerFixture(t)
	c := shell("main", `test "$TOKEN" = later`)
	c.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "late"}, Key: "token"}}}}
	if err := f.h.CreatePod(context.Background(), testPod("waits", corev1.RestartPolicyNever, c)); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "waits", func(p *corev1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonConfigError
	})
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s, want Pending", got.Status.Phase)
	}
	f.objects.addSecret("ns", "late", map[string][]byte{"token": []byte("later")})
	f.waitPod(t, "waits", phaseIs(corev1.PodSucceeded))
}

func TestHandlerDeleteStopsTheProcess(t *testing.T) {
	f := newHandlerFixture(t)
	// The shell marks when it ignores SIGTERM: Running only says the
	// process started, and on a loaded machine a SIGTERM may come before
	// the shell has read its trap.
	trapped := filepath.Join(t.TempDir(), "trapped")
	pod := testPod("long", corev1.RestartPolicyAlways, shell("main", `trap "" TERM; : >`+trapped+`; while :; do sleep 0.1; done`))
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "long", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].State.Running != nil })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(trapped); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never ignored SIGTERM")
		}
	}
	pid := pidOf(got.Status.ContainerStatuses[0].ContainerID)
	if pid == 0 {
		t.Fatalf("no PID in %q", got.Status.ContainerStatuses[0].ContainerID)
	}
	dir := f.h.podDir(pod)

	if err := f.h.DeletePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	// A deleted pod is gone for the pod controller at once.
	if _, err := f.h.GetPod(context.Background(), "ns", "long"); !errdefs.IsNotFound(err) {
		t.Errorf("GetPod after delete: %v", err)
	}
	// The shell ignores SIGTERM, so it takes the grace period and SIGKILL.
	got = f.waitPod(t, "long", phaseIs(corev1.PodFailed))
	if code := got.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != 137 {
		t.Errorf("exit code = %d, want 137", code)
	}
	if !gone(pid, 5*time.Second) {
		t.Errorf("process %d is still running", pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("work directory %s was not removed", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.h.DeletePod(context.Background(), pod); !errdefs.IsNotFound(err) {
		t.Errorf("second delete after cleanup: %v", err)
	}
}

func TestHandlerSimulatesUnmappedImages(t *testing.T) {
	f := newHandlerFixture(t)
	pod := testPod("sim", corev1.RestartPolicyAlways, corev1.Container{Name: "probe", Image: "example.invalid/probe:1"})
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "sim", phaseIs(corev1.PodRunning))
	if got.Annotations[AnnotationPodRunner] != PodRunnerSimulated {
		t.Errorf("annotation = %q", got.Annotations[AnnotationPodRunner])
	}
	cs := got.Status.ContainerStatuses[0]
	if !cs.Ready || !strings.HasPrefix(cs.ContainerID, "simulated://") {
		t.Errorf("status = %+v", cs)
	}

	job := testPod("sim-job", corev1.RestartPolicyNever, corev1.Container{Name: "probe", Image: "example.invalid/probe:1"})
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j"}}
	if err := f.h.CreatePod(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	f.waitPod(t, "sim-job", phaseIs(corev1.PodSucceeded))
	if _, err := os.Stat(f.h.podDir(job)); !os.IsNotExist(err) {
		t.Errorf("a simulated pod got a work directory: %v", err)
	}
}

func TestHandlerUpdateKeepsTheAnnotation(t *testing.T) {
	f := newHandlerFixture(t)
	pod := testPod("labelled", corev1.RestartPolicyAlways, corev1.Container{Name: "probe", Image: "example.invalid/probe:1"})
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	f.waitPod(t, "labelled", phaseIs(corev1.PodRunning))
	updated := pod.DeepCopy()
	updated.Labels = map[string]string{"new": "label"}
	updated.Annotations = map[string]string{"other": "x"}
	if err := f.h.UpdatePod(context.Background(), updated); err != nil {
		t.Fatal(err)
	}
	got := f.waitPod(t, "labelled", func(p *corev1.Pod) bool { return p.Labels["new"] == "label" })
	if got.Annotations[AnnotationPodRunner] != PodRunnerSimulated || got.Annotations["other"] != "x" {
		t.Errorf("annotations = %v", got.Annotations)
	}
}

func TestHandlerSidecarRunsBesideTheContainers(t *testing.T) {
	f := newHandlerFixture(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod("sidecar", corev1.RestartPolicyNever, shell("main", `while [ ! -e ../helper/up ]; do sleep 0.05; done`))
	helper := shell("helper", `touch up; while :; do sleep 0.1; done`)
	helper.RestartPolicy = &always
	pod.Spec.InitContainers = []corev1.Container{helper}
	if err := f.h.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	// The main container finishes only if the sidecar runs beside it; once
	// it has, the sidecar is stopped and the pod's result is the
	// container's.
	got := f.waitPod(t, "sidecar", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded && p.Status.InitContainerStatuses[0].State.Terminated != nil
	})
	if code := got.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != 0 {
		t.Errorf("main exit code = %d", code)
	}
	if pid := pidOf(got.Status.InitContainerStatuses[0].ContainerID); pid == 0 || !gone(pid, 5*time.Second) {
		t.Errorf("sidecar %d was not stopped", pid)
	}
}
