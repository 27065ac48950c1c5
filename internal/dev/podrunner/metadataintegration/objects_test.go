package metadataintegration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	nma "github.com/anvil/anvil/internal/controller/neutronmetadataagent"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// The chassis's pods below are what docs/design/ovn.md says the
// OVNChassis controller creates, built by hand as bare pods on the
// runner's node; the agent's come from the NeutronMetadataAgent
// controller's own builders, so that a change to its contract shows here.
// Bare pods: the runner is what is under test, and they need no
// controller manager.
const (
	ns        = testenv.WorkloadNamespace
	image     = "ghcr.io/c5c3/ovn:26.03.2"
	prefix    = "mdit"
	secretKey = "shared_secret"
)

var grace = int64(5)

func names(s string) string { return prefix + "-" + s }

func plainEnv(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func configMapVolume(name, cm string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
}

func hostPathVolume(name, path string) corev1.Volume {
	t := corev1.HostPathDirectoryOrCreate
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
}

// hostMounts are the chassis containers' hostPath mounts.
var hostMounts = []corev1.VolumeMount{
	{Name: "run-openvswitch", MountPath: "/run/openvswitch"},
	{Name: "run-ovn", MountPath: "/run/ovn"},
	{Name: "etc-openvswitch", MountPath: "/etc/openvswitch"},
}

var hostVolumes = []corev1.Volume{
	hostPathVolume("run-openvswitch", "/run/openvswitch"), hostPathVolume("run-ovn", "/run/ovn"),
	hostPathVolume("etc-openvswitch", "/etc/openvswitch"),
}

// nodePod is a pod of the host network bound to the node.
func nodePod(name, node string, init corev1.Container, containers []corev1.Container, volumes []corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: names(name), Namespace: ns, Labels: map[string]string{"app.kubernetes.io/component": name}},
		Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: true, TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{init}, Containers: containers, Volumes: volumes,
		},
	}
}

// ovsPod is the chassis's OVS pod.
func ovsPod(node string) *corev1.Pod {
	c := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: image, Command: []string{"/bin/bash", "/scripts/" + name + ".sh"}, VolumeMounts: hostMounts}
	}
	return nodePod("ovs", node, c("host-prepare"), []corev1.Container{c("ovsdb-server"), c("ovs-vswitchd")}, hostVolumes)
}

// controllerPod is the chassis's ovn-controller pod with the Southbound
// address it is given; it reads the node's identity from the node, as the
// agent does.
func controllerPod(node, remote string) *corev1.Pod {
	mounts := append([]corev1.VolumeMount{
		{Name: "nodes", MountPath: "/etc/ovn/nodes", ReadOnly: true},
		{Name: "tls", MountPath: "/etc/ovn/tls", ReadOnly: true},
	}, hostMounts...)
	apply := corev1.Container{
		Name: "apply-node", Image: image, Command: []string{"/bin/bash", "/scripts/apply-node.sh"},
		Env: []corev1.EnvVar{
			fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("NODE_IP", "status.hostIP"),
			plainEnv("OVN_REMOTE", remote), plainEnv("OVN_REMOTE_PROBE_INTERVAL_MS", "60000"),
		},
		VolumeMounts: mounts,
	}
	ctl := corev1.Container{
		Name: "ovn-controller", Image: image, Command: []string{"/bin/bash", "/scripts/ovn-controller.sh"},
		Env: []corev1.EnvVar{plainEnv("OVN_REMOTE", remote)}, VolumeMounts: mounts,
	}
	return nodePod("ovn-controller", node, apply, []corev1.Container{ctl},
		append([]corev1.Volume{configMapVolume("nodes", names("nodes")), hostPathVolume("tls", ovnv1alpha1.ChassisIdentityHostPath)}, hostVolumes...))
}

// novaHost names the stand-in the way a real agent names Nova's metadata
// API, by a host name; the runner's alias resolves it inside the node's
// namespace, as nothing else would.
const novaHost = "nova-metadata.anvil.test"

// agent is the NeutronMetadataAgent the test's pod comes from: one
// worker, Nova's metadata API at the stand-in, the shared secret from the
// test's Secret.
func agent(novaPort int) *neutronv1alpha1.NeutronMetadataAgent {
	return &neutronv1alpha1.NeutronMetadataAgent{
		ObjectMeta: metav1.ObjectMeta{Name: prefix, Namespace: ns},
		Spec: neutronv1alpha1.NeutronMetadataAgentSpec{
			OpenStackRelease: "2026.1",
			Image:            anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"},
			ChassisRef:       neutronv1alpha1.ChassisReference{Name: prefix},
			MetadataWorkers:  ptr.To[int32](1),
			NovaMetadata: neutronv1alpha1.NovaMetadataSpec{
				Host: novaHost, Port: ptr.To(int32(novaPort)),
				SharedSecretRef: &neutronv1alpha1.SecretKeyRef{Name: names("shared-secret"), Key: secretKey},
			},
		},
	}
}

// agentObjects are the agent's configuration and scripts ConfigMaps and
// its pod on the node, as the NeutronMetadataAgent controller builds
// them: the pod is the DaemonSet's template, bound to the node, since the
// runner is what is under test, not the DaemonSet controller.
func agentObjects(t *testing.T, node, sb string, novaPort int) []client.Object {
	t.Helper()
	a := agent(novaPort)
	ini, err := nma.RenderAgentINI(a, sb)
	if err != nil {
		t.Fatal(err)
	}
	cm := nma.BuildConfigMap(a, ini)
	ds := nma.BuildDaemonSet(a, nma.DaemonSetInput{
		Chassis:       nma.ResolvedChassis{SBAddress: sb},
		ConfigMapName: cm.Name, ConfigHash: nma.ConfigHash(ini),
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: names("metadata-agent"), Namespace: ns, Labels: ds.Spec.Template.Labels},
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	pod.Spec.TerminationGracePeriodSeconds = &grace
	return []client.Object{cm, nma.BuildScripts(a), pod}
}
