package novacompute

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// SchedulableCandidate tells whether a node has passed every check the
// pool makes without asking Placement, so that asking Placement whether it
// offers the node is worth a request: the node is Active (its host is
// mapped into a cell), its service is up and enabled, its host is in its
// zone aggregate, and the pool first saw its service at or after since,
// the start of the operator process. A node registered before the process
// started onboarded under an earlier one, or is settled; it is never asked
// about, so a restarted operator sends no request for its settled nodes.
// It is pure.
func SchedulableCandidate(e novav1alpha1.NovaComputeNode, zoneAggregate *openstack.Aggregate, since time.Time) bool {
	switch {
	case e.Phase != novav1alpha1.NodeActive, e.ServiceState != "up", e.ServiceStatus != "enabled":
		return false
	case e.ServiceRegisteredAt == nil || e.ServiceRegisteredAt.Time.Before(since.Truncate(time.Second)):
		// The status keeps whole seconds.
		return false
	case e.Zone == "" || zoneAggregate == nil || zoneAggregate.UUID == "":
		return false
	}
	return slices.Contains(zoneAggregate.Hosts, e.Name)
}

// HypervisorIDs maps each host to the ID of its hypervisor, which from
// compute microversion 2.53 on is the compute node's UUID and so the UUID
// of its resource provider in Placement. A host is named as hostMapped
// names it. It is pure.
func HypervisorIDs(hvs []openstack.Hypervisor) map[string]string {
	out := make(map[string]string, len(hvs))
	for _, h := range hvs {
		host := h.ServiceHost
		if host == "" {
			host = h.Hostname
		}
		out[host] = h.ID
	}
	return out
}

// ComputeStarted is when the nova-compute container of the pod on node
// last started, as the node's kubelet reports it (whole seconds), and
// whether any pod of pods reports it: running, or exited after it ran. It
// is pure.
func ComputeStarted(pods []corev1.Pod, node string) (time.Time, bool) {
	for _, pod := range pods {
		if pod.Spec.NodeName != node || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name != computeValue {
				continue
			}
			switch {
			case cs.State.Running != nil && !cs.State.Running.StartedAt.IsZero():
				return cs.State.Running.StartedAt.Time, true
			case cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero():
				return cs.State.Terminated.StartedAt.Time, true
			}
		}
	}
	return time.Time{}, false
}
