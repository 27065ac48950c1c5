package novacompute

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

func TestSchedulableCandidate(t *testing.T) {
	since := time.Date(2026, 12, 2, 10, 0, 0, 500_000_000, time.UTC)
	at := func(d time.Duration) *metav1.Time { v := metav1.NewTime(since.Add(d)); return &v }
	ready := func(mut func(*novav1alpha1.NovaComputeNode)) novav1alpha1.NovaComputeNode {
		e := novav1alpha1.NovaComputeNode{Name: "hv1", Zone: "az1", Phase: novav1alpha1.NodeActive,
			ServiceID: "s1", ServiceState: "up", ServiceStatus: "enabled", ServiceRegisteredAt: at(time.Minute)}
		if mut != nil {
			mut(&e)
		}
		return e
	}
	agg := &openstack.Aggregate{Name: "az1", UUID: "u1", Hosts: []string{"hv0", "hv1"}}
	for _, tc := range []struct {
		name string
		e    novav1alpha1.NovaComputeNode
		agg  *openstack.Aggregate
		want bool
	}{
		{"active, up, enabled, in its zone aggregate", ready(nil), agg, true},
		{"pending: not mapped yet", ready(func(e *novav1alpha1.NovaComputeNode) { e.Phase = novav1alpha1.NodePending }), agg, false},
		{"draining", ready(func(e *novav1alpha1.NovaComputeNode) { e.Phase = novav1alpha1.NodeDraining }), agg, false},
		{"service down", ready(func(e *novav1alpha1.NovaComputeNode) { e.ServiceState = "down" }), agg, false},
		{"service disabled", ready(func(e *novav1alpha1.NovaComputeNode) { e.ServiceStatus = "disabled" }), agg, false},
		{"no registration", ready(func(e *novav1alpha1.NovaComputeNode) { e.ServiceRegisteredAt = nil }), agg, false},
		{"registered before the process started", ready(func(e *novav1alpha1.NovaComputeNode) { e.ServiceRegisteredAt = at(-time.Second) }), agg, false},
		{"registered in the process's first second, kept in whole seconds", ready(func(e *novav1alpha1.NovaComputeNode) {
			e.ServiceRegisteredAt = &metav1.Time{Time: since.Truncate(time.Second)}
		}), agg, true},
		{"no zone", ready(func(e *novav1alpha1.NovaComputeNode) { e.Zone = "" }), agg, false},
		{"no zone aggregate", ready(nil), nil, false},
		{"zone aggregate without a UUID", ready(nil), &openstack.Aggregate{Name: "az1", Hosts: []string{"hv1"}}, false},
		{"not in its zone aggregate", ready(nil), &openstack.Aggregate{Name: "az1", UUID: "u1", Hosts: []string{"hv2"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SchedulableCandidate(tc.e, tc.agg, since); got != tc.want {
				t.Fatalf("SchedulableCandidate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHypervisorIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		hvs  []openstack.Hypervisor
		want map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"by service host", []openstack.Hypervisor{{ID: "u1", Hostname: "hv1.example.org", ServiceHost: "hv1"}}, map[string]string{"hv1": "u1"}},
		{"by hostname without a service host", []openstack.Hypervisor{{ID: "u2", Hostname: "hv2"}}, map[string]string{"hv2": "u2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HypervisorIDs(tc.hvs)
			if len(got) != len(tc.want) {
				t.Fatalf("HypervisorIDs = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("HypervisorIDs = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestComputeStarted(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	gone := metav1.NewTime(t0.Add(time.Hour))
	pod := func(node string, deleting bool, statuses ...corev1.ContainerStatus) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{ContainerStatuses: statuses}}
		if deleting {
			p.DeletionTimestamp = &gone
		}
		return p
	}
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}
	}
	exited := corev1.ContainerStatus{Name: computeValue, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: t0}}}
	waiting := corev1.ContainerStatus{Name: computeValue, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		ok   bool
	}{
		{"no pods", nil, false},
		{"running on the node", []corev1.Pod{pod("hv1", false, running("other"), running(computeValue))}, true},
		{"exited after it ran", []corev1.Pod{pod("hv1", false, exited)}, true},
		{"waiting", []corev1.Pod{pod("hv1", false, waiting)}, false},
		{"on another node", []corev1.Pod{pod("hv2", false, running(computeValue))}, false},
		{"only another container", []corev1.Pod{pod("hv1", false, running("other"))}, false},
		{"a deleted pod", []corev1.Pod{pod("hv1", true, running(computeValue))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ComputeStarted(tc.pods, "hv1")
			if ok != tc.ok || (ok && !got.Equal(t0.Time)) {
				t.Fatalf("ComputeStarted = %v, %v; want %v, %v", got, ok, t0, tc.ok)
			}
		})
	}
}
