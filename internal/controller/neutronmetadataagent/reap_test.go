package neutronmetadataagent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

func mirror(name string, labelled bool) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
	if labelled {
		s.Labels = map[string]string{neutronv1alpha1.MetadataSharedSecretMirrorLabel: "true"}
	}
	return s
}

func naming(name, cluster, secret string, deleting bool) neutronv1alpha1.NeutronMetadataAgent {
	a := testAgent(name, cluster)
	a.Spec.NovaMetadata.SharedSecretRef.Name = secret
	if deleting {
		now := metav1.Now()
		a.DeletionTimestamp = &now
	}
	return *a
}

func TestMirrorsToReap(t *testing.T) {
	const copyName = "cp-nova-metadata-agent-secret"
	me := naming("me", "compute-a", copyName, true)
	falseLabel := mirror("false-label", false)
	falseLabel.Labels = map[string]string{neutronv1alpha1.MetadataSharedSecretMirrorLabel: "false"}
	elsewhere := mirror("other-namespace", true)
	elsewhere.Namespace = "other"
	tests := []struct {
		name    string
		mirrors []corev1.Secret
		agents  []neutronv1alpha1.NeutronMetadataAgent
		want    []string
	}{
		{name: "the last agent reaps", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me}, want: []string{copyName}},
		{name: "another agent on the cluster keeps it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me, naming("other", "compute-a", copyName, false)}},
		{name: "a deleting agent does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me, naming("other", "compute-a", copyName, true)}, want: []string{copyName}},
		{name: "an agent on another cluster does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me, naming("other", "compute-b", copyName, false)}, want: []string{copyName}},
		{name: "a local agent does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me, naming("other", "", copyName, false)}, want: []string{copyName}},
		{name: "an agent naming another copy does not keep it", mirrors: []corev1.Secret{mirror(copyName, true), mirror("old-copy", true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me, naming("other", "compute-a", "old-copy", false)}, want: []string{copyName}},
		{name: "a copy no agent names goes too, sorted", mirrors: []corev1.Secret{mirror("z-copy", true), mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me}, want: []string{copyName, "z-copy"}},
		{name: "unlabelled Secrets are never reaped", mirrors: []corev1.Secret{mirror("mine", false), falseLabel},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me}},
		{name: "another namespace is not the agent's", mirrors: []corev1.Secret{elsewhere},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me}},
		{name: "an agent without a shared secret keeps nothing", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: []neutronv1alpha1.NeutronMetadataAgent{me, func() neutronv1alpha1.NeutronMetadataAgent {
				a := naming("other", "compute-a", "", false)
				a.Spec.NovaMetadata.SharedSecretRef = nil
				return a
			}()}, want: []string{copyName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MirrorsToReap(&me, tt.mirrors, tt.agents)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("reap = %v, want %v", got, tt.want)
			}
		})
	}
}
