package podrunner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container state reasons, the kubelet's words where it has them.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonConfigError       = "CreateContainerConfigError"
	reasonCrashLoop         = "CrashLoopBackOff"
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonStartError        = "StartError"
	reasonStatusUnknown     = "ContainerStatusUnknown"
	reasonPodCompleted      = "PodCompleted"
	reasonKubeletReady      = "KubeletReady"
	startErrorExitCode      = 128
	neverStartedExitCode    = 137
)

// containerState is what the runner knows about one container: the status
// it reports, and whether the container will run again.
type containerState struct {
	status corev1.ContainerStatus
	// final is set once the container has terminated for good: it
	// succeeded, or the restart policy gives it no further run.
	final bool
	// sidecar marks an init container with restartPolicy Always, which
	// starts with the init sequence and then runs beside the containers.
	sidecar bool
}

// started reports whether the container has run at least once.
func (c containerState) started() bool {
	s := c.status
	return s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil || s.RestartCount > 0
}

// succeeded reports whether the container terminated with exit code 0.
func (c containerState) succeeded() bool {
	return c.status.State.Terminated != nil && c.status.State.Terminated.ExitCode == 0
}

// running reports whether the container's process is up.
func (c containerState) running() bool { return c.status.State.Running != nil }

// podView is the input of derivePodStatus.
type podView struct {
	pod        *corev1.Pod
	init, main []containerState
	startTime  *metav1.Time
	// prev are the conditions last reported; a condition whose status did
	// not change keeps its transition time.
	prev []corev1.PodCondition
	now  metav1.Time
	// podIP is the pod's address; empty means HostIP.
	podIP string
}

// derivePodStatus computes a pod's status from its containers' states, by
// the kubelet's rules as far as they apply to processes without probes: a
// running container is ready.
func derivePodStatus(v podView) corev1.PodStatus {
	phase := podPhase(v.init, v.main)
	terminal := phase == corev1.PodSucceeded || phase == corev1.PodFailed
	initialized := initDone(v.init)
	ready := !terminal && len(v.main) > 0
	for _, c := range v.main {
		ready = ready && c.running()
	}
	for _, c := range v.init {
		if c.sidecar {
			ready = ready && c.running()
		}
	}

	podIP := v.podIP
	if podIP == "" {
		podIP = HostIP
	}
	readyReason := ""
	if terminal {
		readyReason = reasonPodCompleted
	}
	conds := []corev1.PodCondition{
		condition(v, corev1.PodScheduled, true, ""),
		condition(v, corev1.PodInitialized, initialized, ""),
		condition(v, corev1.ContainersReady, ready, readyReason),
		condition(v, corev1.PodReady, ready, readyReason),
	}

	status := corev1.PodStatus{
		Phase:      phase,
		Conditions: conds,
		HostIP:     HostIP,
		HostIPs:    []corev1.HostIP{{IP: HostIP}},
		PodIP:      podIP,
		PodIPs:     []corev1.PodIP{{IP: podIP}},
		StartTime:  v.startTime,
		QOSClass:   v.pod.Status.QOSClass,
	}
	for _, c := range v.init {
		status.InitContainerStatuses = append(status.InitContainerStatuses, containerStatus(c, terminal))
	}
	for _, c := range v.main {
		status.ContainerStatuses = append(status.ContainerStatuses, containerStatus(c, terminal))
	}
	return status
}

// podPhase applies the kubelet's phase rules. A failed init container that
// will not run again fails the pod; once every container is final the pod
// succeeded if all of them exited 0; it runs once every container has
// started; until then it is pending.
func podPhase(init, main []containerState) corev1.PodPhase {
	for _, c := range init {
		if c.final && !c.sidecar && !c.succeeded() {
			return corev1.PodFailed
		}
	}
	if len(main) > 0 {
		allFinal, allSucceeded := true, true
		for _, c := range main {
			allFinal = allFinal && c.final
			allSucceeded = allSucceeded && c.succeeded()
		}
		if allFinal {
			if allSucceeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
	}
	if !initDone(init) {
		return corev1.PodPending
	}
	for _, c := range main {
		if !c.started() {
			return corev1.PodPending
		}
	}
	return corev1.PodRunning
}

// initDone reports whether the init sequence is through: every ordinary
// init container succeeded and every sidecar started.
func initDone(init []containerState) bool {
	for _, c := range init {
		if c.sidecar {
			if !c.started() {
				return false
			}
			continue
		}
		if !c.final || !c.succeeded() {
			return false
		}
	}
	return true
}

// condition builds one pod condition, keeping the transition time of the
// previous report when the status is unchanged so that a status update
// does not claim a transition that did not happen.
func condition(v podView, t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: v.now}
	for _, p := range v.prev {
		if p.Type == t && p.Status == status {
			c.LastTransitionTime = p.LastTransitionTime
		}
	}
	return c
}

// containerStatus turns a containerState into the status the API shows.
func containerStatus(c containerState, podTerminal bool) corev1.ContainerStatus {
	s := *c.status.DeepCopy()
	s.Ready = c.running() && !podTerminal
	started := c.running()
	s.Started = &started
	return s
}

// terminatedState describes a finished run of a container. A program that
// could not be started is reported like the kubelet reports a container
// that could not be created: reason StartError, exit code 128, and the
// error as the message.
func terminatedState(exitCode int32, startErr error, containerID string, startedAt, finishedAt metav1.Time) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{
		ExitCode:    exitCode,
		Reason:      reasonCompleted,
		StartedAt:   startedAt,
		FinishedAt:  finishedAt,
		ContainerID: containerID,
	}
	switch {
	case startErr != nil:
		t.ExitCode = startErrorExitCode
		t.Reason = reasonStartError
		t.Message = startErr.Error()
	case exitCode != 0:
		t.Reason = reasonError
	}
	return t
}

// shouldRestart applies a restart policy to a container that exited.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}
