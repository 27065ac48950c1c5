package ovnchassis

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/workload"
)

// Components of the chassis.
const (
	ovsComponent        = "ovs"
	controllerComponent = "ovn-controller"
)

// Host paths both DaemonSets share on a node.
const (
	ovsRunPath = "/run/openvswitch"
	ovnRunPath = "/run/ovn"
	ovsDBPath  = "/etc/openvswitch"
	nodesPath  = "/etc/ovn/nodes"
	tlsPath    = "/etc/ovn/tls"
)

// BuildOVSDaemonSet returns Open vSwitch on every selected node: the
// docs/design/ovn.md contract. The switch needs the host's network and
// kernel, yet no container runs privileged: each drops every capability
// and takes back only those docs/design/security.md lists for it.
func BuildOVSDaemonSet(c *ovnv1alpha1.OVNChassis, scriptsHash string) *appsv1.DaemonSet {
	script := func(name string) []string { return []string{"/bin/bash", scriptsMountPath + "/" + name} }
	mounts := []corev1.VolumeMount{
		{Name: "run-openvswitch", MountPath: ovsRunPath},
		{Name: "etc-openvswitch", MountPath: ovsDBPath},
		workload.ScriptsMount(scriptsMountPath),
	}
	prepare := corev1.Container{
		Name: "host-prepare", Image: c.ResolvedImage(), Command: script("host-prepare.sh"),
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
			{Name: "run-ovn", MountPath: ovnRunPath},
		}, mounts...),
		SecurityContext: withCapabilities("SYS_MODULE", "CHOWN", "FOWNER", "DAC_OVERRIDE"),
	}
	db := corev1.Container{
		Name: "ovsdb-server", Image: c.ResolvedImage(), Command: script("ovsdb-server.sh"), VolumeMounts: mounts,
		SecurityContext: withCapabilities("DAC_OVERRIDE"),
	}
	vswitchd := corev1.Container{
		Name: "ovs-vswitchd", Image: c.ResolvedImage(), Command: script("ovs-vswitchd.sh"), VolumeMounts: mounts,
		Env:             []corev1.EnvVar{{Name: "OVS_REVALIDATOR_THREADS", Value: strconv.Itoa(int(c.Spec.ResolvedRevalidatorThreads()))}},
		SecurityContext: withCapabilities("NET_ADMIN", "NET_RAW", "SYS_NICE", "IPC_LOCK", "DAC_OVERRIDE"),
		// Stopping without --cleanup keeps the datapath forwarding while
		// the pod is replaced.
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"ovs-appctl", "-t", ovsRunPath + "/ovs-vswitchd.ctl", "exit"},
		}}},
	}
	if r := c.Spec.OVS.Resources; r != nil {
		vswitchd.Resources = *r
	}
	volumes := []corev1.Volume{
		hostPath("lib-modules", "/lib/modules", corev1.HostPathDirectory),
		hostPath("run-openvswitch", ovsRunPath, corev1.HostPathDirectoryOrCreate),
		hostPath("run-ovn", ovnRunPath, corev1.HostPathDirectoryOrCreate),
		hostPath("etc-openvswitch", ovsDBPath, corev1.HostPathDirectoryOrCreate),
		workload.ScriptsVolume(ScriptsName(c)),
	}
	return buildDaemonSet(c, OVSName(c), ovsComponent, scriptsHash, []corev1.Container{prepare}, []corev1.Container{db, vswitchd}, volumes)
}

// BuildControllerDaemonSet returns ovn-controller on every selected node.
// It mounts no Secret: it reads the node's own identity from the directory
// the node's identity Job fills, so no node can read another's key.
func BuildControllerDaemonSet(c *ovnv1alpha1.OVNChassis, remote, scriptsHash string) *appsv1.DaemonSet {
	mounts := []corev1.VolumeMount{
		{Name: "run-openvswitch", MountPath: ovsRunPath},
		workload.ScriptsMount(scriptsMountPath),
	}
	apply := applyNodeContainer(c, remote)
	ctl := corev1.Container{
		Name: "ovn-controller", Image: c.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/ovn-controller.sh"},
		Env:     []corev1.EnvVar{{Name: "OVN_REMOTE", Value: remote}},
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: "run-ovn", MountPath: ovnRunPath},
			{Name: "tls", MountPath: tlsPath, ReadOnly: true},
		}, mounts...),
		SecurityContext: withCapabilities("NET_ADMIN", "DAC_OVERRIDE"),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{
				"/bin/sh", "-c", "ovn-appctl -t ovn-controller connection-status | grep -qx connected",
			}}},
			PeriodSeconds: 10,
		},
		// --restart keeps the chassis and its flows while the pod is
		// replaced; the new controller takes them over.
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"ovn-appctl", "-t", "ovn-controller", "exit", "--restart"},
		}}},
	}
	if r := c.Spec.Controller.Resources; r != nil {
		ctl.Resources = *r
	}
	volumes := []corev1.Volume{
		hostPath("run-openvswitch", ovsRunPath, corev1.HostPathDirectoryOrCreate),
		hostPath("run-ovn", ovnRunPath, corev1.HostPathDirectoryOrCreate),
		{Name: "nodes", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: NodesName(c)},
		}}},
		hostPath("tls", hostTLSPath, corev1.HostPathDirectoryOrCreate),
		workload.ScriptsVolume(ScriptsName(c)),
	}
	return buildDaemonSet(c, ControllerName(c), controllerComponent, scriptsHash, []corev1.Container{apply}, []corev1.Container{ctl}, volumes)
}

// applyNodeContainer writes the node's entry into its OVS database; the
// DaemonSet runs it first, and the apply Job runs it again after a change.
func applyNodeContainer(c *ovnv1alpha1.OVNChassis, remote string) corev1.Container {
	return corev1.Container{
		Name: "apply-node", Image: c.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/apply-node.sh"},
		Env: []corev1.EnvVar{
			workload.FieldEnv("NODE_NAME", "spec.nodeName"),
			workload.FieldEnv("NODE_IP", "status.hostIP"),
			{Name: "OVN_REMOTE", Value: remote},
			{Name: "OVN_REMOTE_PROBE_INTERVAL_MS", Value: strconv.Itoa(int(c.Spec.ResolvedRemoteProbeIntervalMs()))},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "run-openvswitch", MountPath: ovsRunPath},
			{Name: "nodes", MountPath: nodesPath, ReadOnly: true},
			workload.ScriptsMount(scriptsMountPath),
		},
		// ovs-vsctl needs no capability: the socket is root's, like the
		// container's user.
		SecurityContext: withCapabilities(),
	}
}

// withCapabilities is a container that drops every capability but add and
// cannot gain more: no chassis container runs privileged.
func withCapabilities(add ...corev1.Capability) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: add},
	}
}

// buildDaemonSet wraps containers into a host-network DaemonSet on the
// chassis's nodes with its update strategy.
func buildDaemonSet(c *ovnv1alpha1.OVNChassis, name, component, scriptsHash string, init, containers []corev1.Container, volumes []corev1.Volume) *appsv1.DaemonSet {
	strategy := appsv1.DaemonSetUpdateStrategy{Type: appsv1.DaemonSetUpdateStrategyType(c.Spec.UpdateStrategy.ResolvedType())}
	if strategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		strategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{
			MaxUnavailable: ptr.To(intstr.FromInt32(c.Spec.UpdateStrategy.ResolvedMaxUnavailable())),
		}
	}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: childLabels(c, component)},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: selector(c, component)},
			UpdateStrategy: strategy,
			Template: workload.WithPullPolicy(pullPolicy(c), corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector(c, component), Annotations: map[string]string{ScriptsHashAnnotation: scriptsHash}},
				Spec: corev1.PodSpec{
					// Nothing in the pods talks to an apiserver.
					AutomountServiceAccountToken: ptr.To(false),
					HostNetwork:                  true,
					DNSPolicy:                    corev1.DNSClusterFirstWithHostNet,
					NodeSelector:                 c.Spec.NodeSelector,
					Tolerations:                  c.Spec.Tolerations,
					InitContainers:               init,
					Containers:                   containers,
					Volumes:                      volumes,
				},
			}),
		},
	}
}

// hostPath is a hostPath volume.
func hostPath(name, path string, t corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(t)}}}
}

// pullPolicy is the pull policy spec.image names, or none, for every
// container of the chassis's pods.
func pullPolicy(c *ovnv1alpha1.OVNChassis) corev1.PullPolicy {
	return corev1.PullPolicy(ovnv1alpha1.ResolveImage(c.Spec.Image).PullPolicy)
}
