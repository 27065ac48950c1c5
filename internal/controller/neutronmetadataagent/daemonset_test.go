package neutronmetadataagent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

func testInput(secret string) DaemonSetInput {
	v := DecideChassis(testAgent("a", ""), testChassis(""), testCentral(false))
	return DaemonSetInput{Chassis: *v.Resolved, ConfigMapName: "agent-config-0123abcd", ConfigHash: "0123abcd-00000000",
		SecretHash: SharedSecretHash([]byte(secret))}
}

// secretVolumes lists the Secrets the pods mount, by volume name.
func secretVolumes(pod corev1.PodSpec) map[string]*corev1.SecretVolumeSource {
	out := map[string]*corev1.SecretVolumeSource{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			out[v.Name] = v.Secret
		}
	}
	return out
}

func mountsOf(c corev1.Container) map[string]corev1.VolumeMount {
	out := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		out[m.MountPath] = m
	}
	return out
}

func TestBuildDaemonSetHTTP(t *testing.T) {
	a := testAgent("agent", "")
	ds := BuildDaemonSet(a, testInput("s3cret"))
	pod := ds.Spec.Template.Spec
	if ds.Name != "agent-metadata-agent" || ds.Labels[componentLabel] != "metadata-agent" || ds.Labels[nameLabel] != "neutronmetadataagent" ||
		ds.Labels[instanceLabel] != "agent" {
		t.Errorf("name/labels = %s %v", ds.Name, ds.Labels)
	}
	if !pod.HostNetwork || pod.NodeSelector["openstack.c5c3.io/chassis"] != "true" || len(pod.Tolerations) != 1 {
		t.Errorf("placement = hostNetwork %v, selector %v, tolerations %v", pod.HostNetwork, pod.NodeSelector, pod.Tolerations)
	}
	if secrets := secretVolumes(pod); len(secrets) != 0 {
		t.Errorf("Secret volumes = %v, want none: the node's chassis identity comes from the node", secrets)
	}
	for _, v := range pod.Volumes {
		if v.Name == volOVNTLS && (v.HostPath == nil || v.HostPath.Path != ovnv1alpha1.ChassisIdentityHostPath) {
			t.Errorf("the OVN identity volume = %+v, want the node's chassis identity directory", v.VolumeSource)
		}
	}
	agent := pod.Containers[0]
	if len(pod.Containers) != 1 || agent.Name != "metadata-agent" ||
		strings.Join(agent.Command, " ") != "neutron-ovn-metadata-agent --config-file /etc/neutron/neutron_ovn_metadata_agent.ini" {
		t.Errorf("container = %s %v", agent.Name, agent.Command)
	}
	if sc := agent.SecurityContext; sc == nil || !*sc.Privileged || *sc.RunAsUser != 0 {
		t.Errorf("agent security = %+v", sc)
	}
	if m := pod.AutomountServiceAccountToken; m == nil || *m {
		t.Errorf("automountServiceAccountToken = %v, want false", m)
	}
	if len(agent.Env) != 1 || agent.Env[0].Name != SharedSecretEnv || agent.Env[0].Value != "" ||
		agent.Env[0].ValueFrom.SecretKeyRef.Name != "controlplane-nova-metadata-agent-secret" || agent.Env[0].ValueFrom.SecretKeyRef.Key != "shared_secret" {
		t.Errorf("env = %+v, want the shared secret from its Secret only", agent.Env)
	}
	m := mountsOf(agent)
	if p := m["/run/netns"].MountPropagation; p == nil || *p != corev1.MountPropagationBidirectional {
		t.Errorf("/run/netns propagation = %v", p)
	}
	if _, ok := m["/etc/nova-metadata-ca"]; ok {
		t.Error("http mounts a CA")
	}
	for _, path := range []string{"/run/openvswitch", "/run/netns"} {
		if !hasHostPath(pod, path) {
			t.Errorf("no DirectoryOrCreate hostPath %s", path)
		}
	}
	if p := agent.ReadinessProbe; p == nil || strings.Join(p.Exec.Command, " ") != "test -S /var/lib/neutron/metadata_proxy" {
		t.Errorf("readiness = %+v", p)
	}
	init := pod.InitContainers[0]
	if len(pod.InitContainers) != 1 || init.Name != "wait-for-chassis" || len(init.Env) != 1 ||
		init.Env[0].Name != SBConnectionEnv || init.Env[0].Value != "ssl:10.0.0.2:6642" {
		t.Errorf("init = %s %+v", init.Name, init.Env)
	}
	if _, ok := mountsOf(init)["/etc/ovn/tls"]; !ok {
		t.Error("the init cannot present the client identity")
	}
}

func hasHostPath(pod corev1.PodSpec, path string) bool {
	for _, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Path == path && *v.HostPath.Type == corev1.HostPathDirectoryOrCreate {
			return true
		}
	}
	return false
}

// With https the CA is the only other Secret mounted: its key projected
// as ca.crt, world-readable, into the agent container only.
func TestBuildDaemonSetHTTPSMountsTheCA(t *testing.T) {
	a := withHTTPS(testAgent("agent", "compute-a"))
	a.Spec.NovaMetadata.CABundleSecretRef.Key = "bundle.pem"
	pod := BuildDaemonSet(a, testInput("s3cret")).Spec.Template.Spec
	secrets := secretVolumes(pod)
	ca := secrets[volCA]
	if len(secrets) != 1 || ca == nil || ca.SecretName != "nova-metadata-ca" || *ca.DefaultMode != 0o444 ||
		len(ca.Items) != 1 || ca.Items[0].Key != "bundle.pem" || ca.Items[0].Path != "ca.crt" {
		t.Fatalf("Secret volumes = %+v", secrets)
	}
	if m, ok := mountsOf(pod.Containers[0])["/etc/nova-metadata-ca"]; !ok || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("CA mount = %+v", m)
	}
	if _, ok := mountsOf(pod.InitContainers[0])["/etc/nova-metadata-ca"]; ok {
		t.Error("the init mounts the CA")
	}
}

// The pod template carries a hash of the shared secret, never the value,
// and it changes with the value, so a rotation rolls the pods.
func TestBuildDaemonSetSecretHash(t *testing.T) {
	a := testAgent("agent", "")
	one := BuildDaemonSet(a, testInput("first-secret")).Spec.Template
	two := BuildDaemonSet(a, testInput("second-secret")).Spec.Template
	h1, h2 := one.Annotations[neutronv1alpha1.MetadataSecretHashAnnotation], two.Annotations[neutronv1alpha1.MetadataSecretHashAnnotation]
	if h1 == "" || h1 == h2 {
		t.Errorf("hashes %q and %q, want two different ones", h1, h2)
	}
	if strings.Contains(h1, "first-secret") || h1 != SharedSecretHash([]byte("first-secret")) {
		t.Errorf("annotation = %q", h1)
	}
	if one.Annotations[ConfigHashAnnotation] != "0123abcd-00000000" {
		t.Errorf("config hash = %q", one.Annotations[ConfigHashAnnotation])
	}
	a.Spec.NovaMetadata.SharedSecretRef = nil
	in := testInput("")
	in.SecretHash = ""
	none := BuildDaemonSet(a, in).Spec.Template
	if _, ok := none.Annotations[neutronv1alpha1.MetadataSecretHashAnnotation]; ok || len(none.Spec.Containers[0].Env) != 0 {
		t.Errorf("an agent without a shared secret: annotations %v, env %v", none.Annotations, none.Spec.Containers[0].Env)
	}
}
