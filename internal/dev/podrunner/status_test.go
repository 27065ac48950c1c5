package podrunner

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// States used by the status tables.
var (
	t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func waiting(reason string) containerState {
	return containerState{status: corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
}

func running() containerState {
	return containerState{status: corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}}
}

func exited(code int32, final bool) containerState {
	return containerState{final: final, status: corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Terminated: terminatedState(code, nil, "process://1", t0, t1)}}}
}

func backingOff() containerState {
	s := waiting(reasonCrashLoop)
	s.status.LastTerminationState = corev1.ContainerState{Terminated: terminatedState(1, nil, "process://1", t0, t1)}
	return s
}

func sidecar(s containerState) containerState {
	s.sidecar = true
	return s
}

// TestPodPhase covers the kubelet's phase rules as they apply to
// processes, init containers and sidecars.
func TestPodPhase(t *testing.T) {
	tests := []struct {
		name       string
		init, main []containerState
		want       corev1.PodPhase
	}{
		{"nothing started", nil, []containerState{waiting(reasonContainerCreating)}, corev1.PodPending},
		{"config error", nil, []containerState{waiting(reasonConfigError)}, corev1.PodPending},
		{"running", nil, []containerState{running()}, corev1.PodRunning},
		{"one of two started", nil, []containerState{running(), waiting(reasonContainerCreating)}, corev1.PodPending},
		{"succeeded", nil, []containerState{exited(0, true)}, corev1.PodSucceeded},
		{"failed", nil, []containerState{exited(3, true)}, corev1.PodFailed},
		{"one failed, one succeeded", nil, []containerState{exited(0, true), exited(1, true)}, corev1.PodFailed},
		{"one final, one running", nil, []containerState{exited(1, true), running()}, corev1.PodRunning},
		{"exited, restart pending", nil, []containerState{exited(1, false)}, corev1.PodRunning},
		{"crash loop", nil, []containerState{backingOff()}, corev1.PodRunning},
		{"init running", []containerState{running()}, []containerState{waiting(reasonContainerCreating)}, corev1.PodPending},
		{"init done", []containerState{exited(0, true)}, []containerState{running()}, corev1.PodRunning},
		{"init failed for good", []containerState{exited(2, true)}, []containerState{waiting(reasonContainerCreating)}, corev1.PodFailed},
		{"init failed, retrying", []containerState{backingOff()}, []containerState{waiting(reasonContainerCreating)}, corev1.PodPending},
		{"sidecar started", []containerState{sidecar(running())}, []containerState{running()}, corev1.PodRunning},
		{"sidecar not started", []containerState{sidecar(waiting(reasonContainerCreating))}, []containerState{waiting(reasonContainerCreating)}, corev1.PodPending},
		{"containers done, sidecar stopped", []containerState{sidecar(exited(143, true))}, []containerState{exited(0, true)}, corev1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podPhase(tt.init, tt.main); got != tt.want {
				t.Errorf("phase = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDerivePodStatus(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort}}
	prev := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: t0},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: t0},
	}
	yes, no := true, false
	tests := []struct {
		name      string
		init      []containerState
		main      []containerState
		wantPhase corev1.PodPhase
		// wantConds are the statuses of PodScheduled, Initialized,
		// ContainersReady and Ready.
		wantConds  [4]corev1.ConditionStatus
		wantReason string
		wantReady  bool
		wantStart  *bool
	}{
		{
			name: "running", main: []containerState{running()}, wantPhase: corev1.PodRunning,
			wantConds: [4]corev1.ConditionStatus{"True", "True", "True", "True"}, wantReady: true, wantStart: &yes,
		},
		{
			name: "creating", init: []containerState{running()}, main: []containerState{waiting(reasonContainerCreating)}, wantPhase: corev1.PodPending,
			wantConds: [4]corev1.ConditionStatus{"True", "False", "False", "False"}, wantStart: &no,
		},
		{
			name: "succeeded", main: []containerState{exited(0, true)}, wantPhase: corev1.PodSucceeded,
			wantConds: [4]corev1.ConditionStatus{"True", "True", "False", "False"}, wantReason: reasonPodCompleted, wantStart: &no,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := derivePodStatus(podView{pod: pod, init: tt.init, main: tt.main, startTime: &t0, prev: prev, now: t1})
			if s.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s", s.Phase, tt.wantPhase)
			}
			types := []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady}
			for i, c := range s.Conditions {
				if c.Type != types[i] || c.Status != tt.wantConds[i] {
					t.Errorf("condition %d = %s %s, want %s %s", i, c.Type, c.Status, types[i], tt.wantConds[i])
				}
				// A condition keeps the earlier transition time unless it flipped.
				wantTime := t1
				if prev[i].Status == c.Status {
					wantTime = t0
				}
				if !c.LastTransitionTime.Equal(&wantTime) {
					t.Errorf("%s transition = %v, want %v", c.Type, c.LastTransitionTime, wantTime)
				}
				if i >= 2 && c.Reason != tt.wantReason {
					t.Errorf("%s reason = %q, want %q", c.Type, c.Reason, tt.wantReason)
				}
			}
			if s.HostIP != "127.0.0.1" || s.PodIP != "127.0.0.1" || len(s.HostIPs) != 1 || len(s.PodIPs) != 1 {
				t.Errorf("addresses = %s %v %s %v", s.HostIP, s.HostIPs, s.PodIP, s.PodIPs)
			}
			if s.QOSClass != corev1.PodQOSBestEffort || s.StartTime == nil || !s.StartTime.Equal(&t0) {
				t.Errorf("qos %s, start %v", s.QOSClass, s.StartTime)
			}
			if len(s.ContainerStatuses) != len(tt.main) || len(s.InitContainerStatuses) != len(tt.init) {
				t.Fatalf("statuses: %d init, %d main", len(s.InitContainerStatuses), len(s.ContainerStatuses))
			}
			cs := s.ContainerStatuses[0]
			if cs.Ready != tt.wantReady || !reflect.DeepEqual(cs.Started, tt.wantStart) {
				t.Errorf("ready %v started %v, want %v %v", cs.Ready, *cs.Started, tt.wantReady, *tt.wantStart)
			}
		})
	}
}

func TestTerminatedState(t *testing.T) {
	tests := []struct {
		name        string
		code        int32
		startErr    error
		wantCode    int32
		wantReason  string
		wantMessage string
	}{
		{"success", 0, nil, 0, "Completed", ""},
		{"failure", 3, nil, 3, "Error", ""},
		{"killed by SIGTERM", 143, nil, 143, "Error", ""},
		{"cannot start", 0, errors.New(`exec: "/usr/bin/nova-manage": no such file`), 128, "StartError", `exec: "/usr/bin/nova-manage": no such file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := terminatedState(tt.code, tt.startErr, "process://7", t0, t1)
			want := &corev1.ContainerStateTerminated{
				ExitCode: tt.wantCode, Reason: tt.wantReason, Message: tt.wantMessage,
				StartedAt: t0, FinishedAt: t1, ContainerID: "process://7",
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("terminatedState = %+v, want %+v", got, want)
			}
		})
	}
}

func TestShouldRestart(t *testing.T) {
	tests := []struct {
		policy corev1.RestartPolicy
		code   int32
		want   bool
	}{
		{corev1.RestartPolicyAlways, 0, true},
		{corev1.RestartPolicyAlways, 1, true},
		{"", 0, true},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 2, true},
		{corev1.RestartPolicyNever, 0, false},
		{corev1.RestartPolicyNever, 2, false},
	}
	for _, tt := range tests {
		if got := shouldRestart(tt.policy, tt.code); got != tt.want {
			t.Errorf("shouldRestart(%q, %d) = %v, want %v", tt.policy, tt.code, got, tt.want)
		}
	}
}
