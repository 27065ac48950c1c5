package podrunner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/anvil/anvil/internal/dev/procgroup"
)

// Annotation the runner sets on every pod it handles, saying whether the
// pod's containers run as processes or are only simulated.
const (
	// AnnotationPodRunner is the annotation's key.
	AnnotationPodRunner = "anvil.c5c3.io/pod-runner"
	// PodRunnerProcess marks a pod at least one of whose containers runs as
	// a local process.
	PodRunnerProcess = "process"
	// PodRunnerSimulated marks a pod none of whose images has a mapping; it
	// is reported the way kwok reports pods.
	PodRunnerSimulated = "simulated"
)

// Timing of restarts and stops.
const (
	// restartBackoff is the first wait before a container is restarted or
	// its preparation retried; it doubles up to maxRestartBackoff. It is far
	// shorter than the kubelet's, since tests wait for restarts.
	restartBackoff    = time.Second
	maxRestartBackoff = 30 * time.Second
	// stableRun is how long a run must last for the backoff to start over.
	stableRun = 30 * time.Second
	// defaultGrace applies when a pod names no grace period.
	defaultGrace = 30 * time.Second
	// shutdownGrace caps the grace period when the runner itself stops, so
	// that stopping a test or the devstack does not wait for every pod's
	// full grace period.
	shutdownGrace = 5 * time.Second
	// basePath is the PATH of every process: an image's usual PATH, rather
	// than the runner's, which may put another python3 first.
	basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// plan is how one container of a pod is run.
type plan struct {
	spec *corev1.Container
	// mapping is nil for a simulated container.
	mapping *Mapping
	init    bool
	sidecar bool
	index   int
}

// prepared is a container's command, ready to start.
type prepared struct {
	cmd Command
	env []string
	dir string
	log string
}

// podRun is one pod on one node, from CreatePod until its processes have
// stopped. A goroutine runs it through preparation, its init containers and
// its containers; DeletePod and the runner's shutdown cancel it.
type podRun struct {
	h     *nodeHandler
	key   string
	dir   string
	mode  string
	plans []plan
	log   logr.Logger
	// podIP is the address the pod reports: HostIP, or its own loopback
	// address when a mapping asks for one.
	podIP string

	// spec is the pod as created. It is never modified, so preparation
	// and the containers read it without locking; pod below is the copy
	// whose metadata follows the API server.
	spec *corev1.Pod

	ctx    context.Context
	cancel context.CancelFunc
	// done is closed when every process of the pod has stopped.
	done chan struct{}
	// cleaned is closed once a deleted pod's directory is removed.
	cleaned chan struct{}

	mu        sync.Mutex
	pod       *corev1.Pod
	init      []containerState
	main      []containerState
	startTime *metav1.Time
	last      *corev1.Pod
	deleted   bool
	grace     time.Duration
	commands  map[string]prepared

	// publishMu keeps status reports in the order they were computed.
	publishMu sync.Mutex
}

// newPodRun plans a pod: which containers run, which are simulated.
func newPodRun(h *nodeHandler, pod *corev1.Pod) *podRun {
	pod = pod.DeepCopy()
	// Managed fields are left out of the object handed back for status
	// updates: a status update that carries them would replace the
	// server's record of field owners with this stale copy.
	pod.ManagedFields = nil
	r := &podRun{
		h:       h,
		key:     pod.Namespace + "/" + pod.Name,
		dir:     h.podDir(pod),
		spec:    pod,
		done:    make(chan struct{}),
		cleaned: make(chan struct{}),
		grace:   deletionGrace(pod),
	}
	r.log = h.log.WithValues("pod", r.key)
	r.ctx, r.cancel = context.WithCancel(h.ctx)
	r.mode = PodRunnerSimulated
	add := func(c *corev1.Container, init bool, index int) containerState {
		p := plan{spec: c, init: init, index: index}
		p.sidecar = init && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if m, ok := h.images.Lookup(c); ok {
			p.mapping = &m
			r.mode = PodRunnerProcess
		}
		r.plans = append(r.plans, p)
		return containerState{sidecar: p.sidecar, status: corev1.ContainerStatus{
			Name:  c.Name,
			Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}},
		}}
	}
	for i := range pod.Spec.InitContainers {
		r.init = append(r.init, add(&pod.Spec.InitContainers[i], true, i))
	}
	for i := range pod.Spec.Containers {
		r.main = append(r.main, add(&pod.Spec.Containers[i], false, i))
	}
	r.podIP = podAddress(pod, r.plans)
	// The downward API reads the pod IP from here, so that status.podIP in
	// the env is the address the pod reports.
	pod.Status.PodIP = r.podIP
	pod.Status.PodIPs = []corev1.PodIP{{IP: r.podIP}}
	r.pod = pod.DeepCopy()
	setAnnotation(r.pod, r.mode)
	return r
}

// setAnnotation records how the runner handles the pod; the object the
// runner reports carries it, so every status update writes it.
func setAnnotation(pod *corev1.Pod, mode string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationPodRunner] = mode
}

// deletionGrace is the time a process gets between SIGTERM and SIGKILL.
func deletionGrace(pod *corev1.Pod) time.Duration {
	if s := pod.DeletionGracePeriodSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return defaultGrace
}

// isJobPod reports whether a Job owns the pod; kwok finishes such pods, and
// so does the simulation.
func isJobPod(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "Job" {
			return true
		}
	}
	return false
}

// state returns the state of a plan's container; the caller holds mu.
func (r *podRun) state(p plan) *containerState {
	if p.init {
		return &r.init[p.index]
	}
	return &r.main[p.index]
}

// update changes a container's state and reports the pod's new status.
func (r *podRun) update(p plan, change func(s *containerState)) {
	r.mu.Lock()
	change(r.state(p))
	r.mu.Unlock()
	r.publish()
}

// publish derives the pod's status and hands it to the pod controller.
func (r *podRun) publish() {
	r.publishMu.Lock()
	defer r.publishMu.Unlock()
	r.mu.Lock()
	var prev []corev1.PodCondition
	if r.last != nil {
		prev = r.last.Status.Conditions
	}
	pod := r.pod.DeepCopy()
	pod.Status = derivePodStatus(podView{
		pod: r.pod, init: r.init, main: r.main, startTime: r.startTime, prev: prev, now: metav1.Now(), podIP: r.podIP,
	})
	r.last = pod
	r.mu.Unlock()
	r.h.notify(pod.DeepCopy())
}

// snapshot returns the pod as last reported.
func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return nil
	}
	return r.last.DeepCopy()
}

// run takes the pod through its life; it returns when every process has
// stopped, and reports the final status.
func (r *podRun) run() {
	defer close(r.done)
	defer r.finish()
	r.mu.Lock()
	now := metav1.Now()
	r.startTime = &now
	r.mu.Unlock()
	if !r.prepare() {
		return
	}
	if r.mode != PodRunnerSimulated {
		// The sync stops before the pod's directory can be removed.
		syncCtx, stopSync := context.WithCancel(r.ctx)
		var syncing sync.WaitGroup
		syncing.Go(func() { r.syncVolumes(syncCtx) })
		defer func() {
			stopSync()
			syncing.Wait()
		}()
	}

	// Sidecars run beside everything after them and stop once the
	// containers are done, as restartable init containers do.
	sidecarCtx, stopSidecars := context.WithCancel(r.ctx)
	var sidecars sync.WaitGroup
	defer func() {
		stopSidecars()
		sidecars.Wait()
	}()
	for _, p := range r.plans {
		if !p.init {
			continue
		}
		if p.sidecar {
			started := make(chan struct{})
			var once sync.Once
			onStart := func() { once.Do(func() { close(started) }) }
			sidecars.Add(1)
			go func() {
				defer sidecars.Done()
				r.loop(sidecarCtx, p, corev1.RestartPolicyAlways, onStart)
			}()
			select {
			case <-started:
			case <-r.ctx.Done():
				return
			}
			continue
		}
		if !r.runInit(p) {
			return
		}
	}
	var containers sync.WaitGroup
	for _, p := range r.plans {
		if p.init {
			continue
		}
		containers.Add(1)
		go func() {
			defer containers.Done()
			r.loop(r.ctx, p, r.spec.Spec.RestartPolicy, nil)
		}()
	}
	containers.Wait()
}

// prepare materialises the volumes and builds every mapped container's
// command, retrying with backoff while a Secret or ConfigMap is missing,
// the way the kubelet waits for them. A simulated pod needs none of it.
func (r *podRun) prepare() bool {
	if r.mode == PodRunnerSimulated {
		return true
	}
	backoff := restartBackoff
	for {
		err := r.prepareOnce()
		if err == nil {
			return true
		}
		// The message names objects and keys, never values, and becomes the
		// containers' waiting message, as with the kubelet.
		r.log.Info("cannot prepare the pod; retrying", "error", err.Error(), "in", backoff)
		r.mu.Lock()
		for _, states := range [][]containerState{r.init, r.main} {
			for i := range states {
				states[i].status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonConfigError, Message: err.Error()}}
			}
		}
		r.mu.Unlock()
		r.publish()
		if !sleep(r.ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, maxRestartBackoff)
	}
}

// prepareOnce is one attempt of prepare.
func (r *podRun) prepareOnce() error {
	// A test binary that has ended its programs prepares no new pod: its
	// scratch directories are about to be removed.
	if procgroup.Closed() {
		return errShutDown
	}
	vols, err := materialiseVolumes(r.ctx, r.spec, r.h.src, r.dir, r.h.hostRoot(), r.h.claimRoot())
	if err != nil {
		return err
	}
	annotations, err := r.nodeAnnotations()
	if err != nil {
		return err
	}
	commands := map[string]prepared{}
	for _, p := range r.plans {
		if p.mapping == nil {
			continue
		}
		c, err := r.prepareContainer(p, vols, annotations)
		if err != nil {
			return fmt.Errorf("container %s: %w", p.spec.Name, err)
		}
		commands[p.spec.Name] = c
	}
	r.mu.Lock()
	r.commands = commands
	r.mu.Unlock()
	return nil
}

// prepareContainer resolves a container's mounts and environment and asks
// its mapping for the command.
func (r *podRun) prepareContainer(p plan, vols map[string]volume, nodeAnnotations map[string]string) (prepared, error) {
	mounts, err := containerMounts(p.spec, vols)
	if err != nil {
		return prepared{}, err
	}
	vars, err := resolveEnv(r.ctx, r.spec, p.spec, r.h.src)
	if err != nil {
		return prepared{}, err
	}
	workDir := filepath.Join(r.dir, containersDirName, p.spec.Name)
	plain := map[string]string{}
	for _, v := range vars {
		if !v.secret {
			plain[v.name] = v.value
		}
	}
	cmd, err := p.mapping.Build(Container{
		Pod: r.spec, Spec: p.spec, NodeName: r.h.node, NodeAnnotations: nodeAnnotations, Mounts: mounts, WorkDir: workDir, Env: plain,
		PodIP: r.podIP, HostRoot: r.h.hostRoot(), NetNS: r.h.netnsName(), Resolve: resolver{ctx: r.ctx, src: r.h.cluster}.resolve,
	})
	if err != nil {
		return prepared{}, fmt.Errorf("mapping %s: %w", p.mapping.Name, err)
	}
	dir := workDir
	if wd := p.spec.WorkingDir; wd != "" {
		if local, ok := mounts.Path(wd); ok {
			dir = local
		}
	}
	cmd.Dirs = append(cmd.Dirs, workDir, dir)
	// The mapping's variables come last: they say where this host keeps
	// what the image would keep at fixed paths.
	for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
		vars = append(vars, envVar{name: k, value: cmd.Env[k]})
	}
	return prepared{
		cmd: cmd,
		env: processEnv(r.spec, workDir, r.h.env, vars),
		dir: dir,
		log: filepath.Join(r.dir, logsDirName, p.spec.Name+".log"),
	}, nil
}

// processEnv is a process's whole environment: a base an image would have,
// the runner's extra variables, then the container's own, later entries
// replacing earlier ones of the same name.
func processEnv(pod *corev1.Pod, home string, extra map[string]string, vars []envVar) []string {
	var names []string
	values := map[string]string{}
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			names = append(names, k)
		}
		values[k] = v
	}
	set("PATH", basePath)
	set("HOME", home)
	set("HOSTNAME", pod.Name)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		set(k, extra[k])
	}
	for _, v := range vars {
		set(v.name, v.value)
	}
	env := make([]string, 0, len(names))
	for _, k := range names {
		env = append(env, k+"="+values[k])
	}
	return env
}

// runInit runs an init container until it succeeds. It reports false when
// the pod stops or the container failed for good.
func (r *podRun) runInit(p plan) bool {
	backoff := restartBackoff
	for {
		code, ran, cancelled := r.runOnce(r.ctx, p, nil)
		if cancelled {
			return false
		}
		if code == 0 || !shouldRestart(r.spec.Spec.RestartPolicy, code) {
			r.update(p, func(s *containerState) { s.final = true })
			return code == 0
		}
		if !r.backOff(p, &backoff, ran) {
			return false
		}
	}
}

// loop runs a container, restarting it as policy says, until it is final
// or ctx ends. onStart, if set, is called whenever the container starts.
func (r *podRun) loop(ctx context.Context, p plan, policy corev1.RestartPolicy, onStart func()) {
	backoff := restartBackoff
	for {
		code, ran, cancelled := r.runOnce(ctx, p, onStart)
		if cancelled {
			return
		}
		if !shouldRestart(policy, code) {
			r.update(p, func(s *containerState) { s.final = true })
			return
		}
		if !r.backOff(p, &backoff, ran) {
			return
		}
	}
}

// backOff reports the container as waiting to restart and waits. A run that
// lasted resets the backoff, as with the kubelet.
func (r *podRun) backOff(p plan, backoff *time.Duration, ran time.Duration) bool {
	if ran >= stableRun {
		*backoff = restartBackoff
	}
	wait := *backoff
	r.update(p, func(s *containerState) {
		s.status.LastTerminationState = s.status.State
		s.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  reasonCrashLoop,
			Message: fmt.Sprintf("back-off %s restarting failed container %s", wait, p.spec.Name),
		}}
	})
	*backoff = min(2**backoff, maxRestartBackoff)
	return sleep(r.ctx, wait)
}

// runOnce runs a container once and returns its exit code, how long it ran,
// and whether it ended because the pod is stopping. onStart, if set, is
// called once the program runs.
func (r *podRun) runOnce(ctx context.Context, p plan, onStart func()) (int32, time.Duration, bool) {
	if p.mapping == nil {
		return r.simulateOnce(ctx, p, onStart)
	}
	r.mu.Lock()
	c := r.commands[p.spec.Name]
	r.mu.Unlock()
	if ctx.Err() != nil {
		return 0, 0, true
	}
	proc, err := r.h.start(ctx, c)
	if err != nil {
		// Errors of exec name the program, which is no secret.
		r.log.Error(err, "cannot start the container's program", "container", p.spec.Name, "program", c.cmd.Path)
		now := metav1.Now()
		r.update(p, func(s *containerState) {
			s.status.State = corev1.ContainerState{Terminated: terminatedState(0, err, "", now, now)}
		})
		return startErrorExitCode, 0, false
	}
	startedAt := metav1.NewTime(proc.started)
	id := processContainerID(proc.pid)
	r.log.Info("started a container", "container", p.spec.Name, "pid", proc.pid, "argv", append([]string{c.cmd.Path}, c.cmd.Args...))
	r.update(p, func(s *containerState) {
		if s.started() {
			s.status.RestartCount++
		}
		s.status.ContainerID = id
		s.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
	})
	if onStart != nil {
		onStart()
	}

	cancelled := false
	select {
	case <-proc.done:
	case <-ctx.Done():
		cancelled = true
		proc.stop(r.stopGrace())
	}
	finished := metav1.Now()
	r.log.Info("container exited", "container", p.spec.Name, "pid", proc.pid, "exitCode", proc.exitCode)
	r.update(p, func(s *containerState) {
		s.status.State = corev1.ContainerState{Terminated: terminatedState(proc.exitCode, nil, id, startedAt, finished)}
	})
	return proc.exitCode, finished.Sub(startedAt.Time), cancelled
}

// simulateOnce reports a container the way kwok would: running at once,
// and, in a Job's pod, completed right after. Init containers complete at
// once.
func (r *podRun) simulateOnce(ctx context.Context, p plan, onStart func()) (int32, time.Duration, bool) {
	now := metav1.Now()
	id := simulatedContainerID(r.spec.Namespace, r.spec.Name, p.spec.Name)
	if p.init && !p.sidecar {
		r.update(p, func(s *containerState) {
			s.status.ContainerID = id
			s.status.State = corev1.ContainerState{Terminated: terminatedState(0, nil, id, now, now)}
		})
		return 0, 0, false
	}
	r.update(p, func(s *containerState) {
		s.status.ContainerID = id
		s.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	})
	if onStart != nil {
		onStart()
	}
	if !p.sidecar && isJobPod(r.spec) {
		finished := metav1.Now()
		r.update(p, func(s *containerState) {
			s.status.State = corev1.ContainerState{Terminated: terminatedState(0, nil, id, now, finished)}
		})
		return 0, 0, false
	}
	<-ctx.Done()
	finished := metav1.Now()
	r.update(p, func(s *containerState) {
		s.status.State = corev1.ContainerState{Terminated: terminatedState(0, nil, id, now, finished)}
	})
	return 0, finished.Sub(now.Time), true
}

// finish marks every container final and reports the pod's last status: a
// container stopped while waiting keeps its last run's result, and one that
// never ran is reported the way the kubelet reports a container it could
// not find.
func (r *podRun) finish() {
	r.mu.Lock()
	now := metav1.Now()
	for _, states := range [][]containerState{r.init, r.main} {
		for i := range states {
			s := &states[i]
			if s.final {
				continue
			}
			s.final = true
			if s.status.State.Terminated != nil {
				continue
			}
			if last := s.status.LastTerminationState.Terminated; last != nil {
				s.status.State = corev1.ContainerState{Terminated: last.DeepCopy()}
				continue
			}
			s.status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: neverStartedExitCode, Reason: reasonStatusUnknown,
				Message: "the container did not run before the pod stopped", StartedAt: now, FinishedAt: now,
			}}
		}
	}
	r.mu.Unlock()
	// A report after the runner stopped would go to a pod controller that
	// is gone.
	if r.h.ctx.Err() == nil {
		r.publish()
	}
	r.log.V(1).Info("pod stopped")
}

// stopGrace is the grace period for stopping the pod's processes now.
func (r *podRun) stopGrace() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.deleted {
		return min(r.grace, shutdownGrace)
	}
	return r.grace
}

// delete stops the pod for good and removes its directory once its
// processes are gone. It returns at once; cleaned is closed when done.
func (r *podRun) delete(pod *corev1.Pod) {
	r.mu.Lock()
	if r.deleted {
		r.mu.Unlock()
		return
	}
	r.deleted = true
	if pod != nil && pod.UID == r.spec.UID {
		r.grace = deletionGrace(pod)
	}
	r.mu.Unlock()
	r.log.Info("stopping a deleted pod", "grace", r.grace)
	r.cancel()
	go func() {
		<-r.done
		if err := os.RemoveAll(r.dir); err != nil {
			r.log.Error(err, "cannot remove the pod's directory", "dir", r.dir)
		}
		r.h.forget(r)
		close(r.cleaned)
	}()
}

// isDeleted reports whether delete was called.
func (r *podRun) isDeleted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted
}

// refresh takes over metadata changes of the pod from the API server, such
// as labels, so that status updates, which write the whole object, do not
// revert them.
func (r *podRun) refresh(pod *corev1.Pod) {
	r.mu.Lock()
	r.pod.Labels = maps.Clone(pod.Labels)
	r.pod.Annotations = maps.Clone(pod.Annotations)
	setAnnotation(r.pod, r.mode)
	r.pod.ResourceVersion = pod.ResourceVersion
	r.mu.Unlock()
	r.publish()
	// Labels decide which Services select the pod.
	r.h.notifyChanged()
}

// sleep waits for d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// podDirName is the directory name of one pod: unique per pod object, and
// readable enough to find by hand.
func podDirName(pod *corev1.Pod) string {
	return strings.Join([]string{pod.Namespace, pod.Name, string(pod.UID)}, "_")
}
