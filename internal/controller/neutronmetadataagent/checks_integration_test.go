package neutronmetadataagent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/neutronmetadataagent"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// checkDaemonSet checks the guide agent's DaemonSet as compute-a has it:
// owned by label, on the chassis's nodes, mounting the chassis's client
// Secret and the CA and no other Secret, with the shared secret from its
// Secret and only its hash on the template.
func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet, sb string) {
	t.Helper()
	if ds.Labels[childwriter.OwnerKindLabel] != "NeutronMetadataAgent" || ds.Labels[childwriter.OwnerNameLabel] != "guide-agent" ||
		len(ds.OwnerReferences) != 0 {
		t.Errorf("ownership = labels %v, refs %v", ds.Labels, ds.OwnerReferences)
	}
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork || pod.NodeSelector["openstack.c5c3.io/chassis"] != "true" || len(pod.Tolerations) != 1 {
		t.Errorf("placement = hostNetwork %v, selector %v, tolerations %v", pod.HostNetwork, pod.NodeSelector, pod.Tolerations)
	}
	secrets := map[string]corev1.SecretVolumeSource{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secrets[v.Secret.SecretName] = *v.Secret
		}
	}
	ca, hasCA := secrets["nova-metadata-ca"]
	if len(secrets) != 1 || !hasCA {
		t.Errorf("Secret volumes = %v, want the CA alone: the node's chassis identity comes from the node", secrets)
	}
	if len(ca.Items) != 1 || ca.Items[0].Key != "ca.crt" || ca.Items[0].Path != "ca.crt" || *ca.DefaultMode != 0o444 {
		t.Errorf("CA volume = %+v", ca)
	}
	agent := pod.Containers[0]
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range agent.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, path := range []string{"/etc/ovn/tls", "/etc/nova-metadata-ca", "/etc/neutron", "/run/openvswitch", "/run/netns"} {
		if _, ok := mounts[path]; !ok {
			t.Errorf("the agent does not mount %s", path)
		}
	}
	if p := mounts["/run/netns"].MountPropagation; p == nil || *p != corev1.MountPropagationBidirectional {
		t.Errorf("/run/netns propagation = %v", p)
	}
	ref := agent.Env[0].ValueFrom
	if len(agent.Env) != 1 || agent.Env[0].Name != neutronmetadataagent.SharedSecretEnv || ref == nil || ref.SecretKeyRef == nil ||
		ref.SecretKeyRef.Name != mirrorName || ref.SecretKeyRef.Key != "shared_secret" {
		t.Errorf("env = %+v", agent.Env)
	}
	if init := pod.InitContainers[0]; init.Name != "wait-for-chassis" || init.Env[0].Value != sb {
		t.Errorf("init %s env %+v, want %s = %s", init.Name, init.Env, neutronmetadataagent.SBConnectionEnv, sb)
	}
	if got := ds.Spec.Template.Annotations[neutronv1alpha1.MetadataSecretHashAnnotation]; got != neutronmetadataagent.SharedSecretHash([]byte(sharedSecret)) {
		t.Errorf("secret hash annotation = %q", got)
	}
}

// checkConfigMap checks the configuration the DaemonSet mounts: on the
// same cluster, immutable, reading the Southbound's node addresses and
// the CA, and never holding the shared secret.
func checkConfigMap(t *testing.T, c *testenv.Cluster, ds *appsv1.DaemonSet, sb string) {
	t.Helper()
	name := ""
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, "guide-agent-config-") {
			name = v.ConfigMap.Name
		}
	}
	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatalf("the configuration %q the DaemonSet mounts: %v", name, err)
	}
	ini := cm.Data[neutronmetadataagent.ConfigKey]
	if cm.Immutable == nil || !*cm.Immutable {
		t.Error("the configuration is not immutable")
	}
	for _, want := range []string{"ovn_sb_connection = " + sb, "nova_metadata_host = nova-metadata.127-0-0-1.nip.io",
		"nova_metadata_port = 443", "nova_metadata_protocol = https", "auth_ca_cert = /etc/nova-metadata-ca/ca.crt"} {
		if !strings.Contains(ini, want) {
			t.Errorf("the configuration lacks %q:\n%s", want, ini)
		}
	}
	for _, never := range []string{sharedSecret, "metadata_proxy_shared_secret", "transport_url"} {
		if strings.Contains(ini, never) {
			t.Errorf("the configuration holds %q", never)
		}
	}
}

// assertNoSecretLeak fails if the shared secret's value reached the
// operator's log or the agent's status.
func assertNoSecretLeak(t *testing.T, a *neutronv1alpha1.NeutronMetadataAgent) {
	t.Helper()
	status, err := json.Marshal(a.Status)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"the operator's log": logs.String(), "the status": string(status)} {
		if strings.Contains(text, sharedSecret) {
			t.Errorf("the shared secret reached %s", what)
		}
	}
}
