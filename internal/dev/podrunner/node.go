package podrunner

import (
	"context"
	"fmt"
	"maps"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// clearStartupTaint removes the node.kubernetes.io/not-ready taint that the
// API server's TaintNodesByCondition admission puts on every new node. A
// controller manager lifts it once the node reports Ready; test clusters
// often run none, and the runner's nodes are Ready from the start, so the
// runner lifts it itself. A controller manager that does run puts it back
// only if the node stops being Ready.
func clearStartupTaint(ctx context.Context, client kubernetes.Interface, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := node.Spec.Taints[:0]
		for _, t := range node.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// nodeObject is the Node a runner registers: Ready, untainted, with room for
// anything the tests schedule, and reachable on the loopback address.
func nodeObject(n Node) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   n.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: runtime.GOARCH,
	}
	maps.Copy(labels, n.Labels)
	// The hostname label identifies the node to DaemonSets and topology
	// spreading; a caller's label must not contradict the name.
	labels[corev1.LabelHostname] = n.Name
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: maps.Clone(n.Annotations)},
		Spec:       corev1.NodeSpec{},
		Status: corev1.NodeStatus{
			Phase:       corev1.NodeRunning,
			Capacity:    nodeCapacity.DeepCopy(),
			Allocatable: nodeCapacity.DeepCopy(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, reasonKubeletReady, "anvil-podrunner is running the node"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", ""),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", ""),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", ""),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", ""),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: HostIP},
				{Type: corev1.NodeHostName, Address: n.Name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux",
				Architecture:    runtime.GOARCH,
				KubeletVersion:  kubeletVersion,
			},
		},
	}
}

// nodeSource reads the annotations of the runner's Node, which mappings
// take per-node settings from.
type nodeSource interface {
	NodeAnnotations(ctx context.Context, name string) (map[string]string, error)
}

// nodeAnnotations reads the node's annotations once per preparation, so a
// changed annotation reaches a pod when it is recreated. A source that
// cannot read Nodes, as in unit tests, yields none.
func (r *podRun) nodeAnnotations() (map[string]string, error) {
	src, ok := r.h.src.(nodeSource)
	if !ok {
		return nil, nil
	}
	a, err := src.NodeAnnotations(r.ctx, r.h.node)
	if err != nil {
		return nil, fmt.Errorf("reading the annotations of node %s: %w", r.h.node, err)
	}
	return a, nil
}
