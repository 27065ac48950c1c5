package neutronmetadataagent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
)

// mirror is a Secret named name in openstack; delivered gives it the
// labels a ControlPlane's copy carries, naming the ControlPlane cp.
func mirror(name string, delivered bool) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
	if delivered {
		s.Labels = map[string]string{
			neutronv1alpha1.MetadataSharedSecretMirrorLabel: "true",
			childwriter.OwnerKindLabel:                      "ControlPlane", childwriter.OwnerNameLabel: "cp",
			childwriter.OwnerNamespaceLabel: "openstack",
		}
	}
	return s
}

// relabelled is the delivered copy with one label changed, or removed
// when value is "".
func relabelled(key, value string) corev1.Secret {
	s := mirror(copyName, true)
	if value == "" {
		delete(s.Labels, key)
	} else {
		s.Labels[key] = value
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

const copyName = "cp-nova-metadata-agent-secret"

func TestMirrorsToReap(t *testing.T) {
	me := naming("me", "compute-a", copyName, true)
	elsewhere := mirror(copyName, true)
	elsewhere.Namespace = "other"
	elsewhere.Labels[childwriter.OwnerNamespaceLabel] = "other"
	// A copy of ControlPlane "x" under the name of "cp"'s copy.
	misnamed := relabelled(childwriter.OwnerNameLabel, "x")
	agents := func(others ...neutronv1alpha1.NeutronMetadataAgent) []neutronv1alpha1.NeutronMetadataAgent {
		return append([]neutronv1alpha1.NeutronMetadataAgent{me}, others...)
	}
	tests := []struct {
		name    string
		me      *neutronv1alpha1.NeutronMetadataAgent
		mirrors []corev1.Secret
		agents  []neutronv1alpha1.NeutronMetadataAgent
		want    []string
	}{
		{name: "the last agent reaps", mirrors: []corev1.Secret{mirror(copyName, true)}, agents: agents(), want: []string{copyName}},
		{name: "another agent on the cluster keeps it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: agents(naming("other", "compute-a", copyName, false))},
		{name: "a deleting agent does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: agents(naming("other", "compute-a", copyName, true)), want: []string{copyName}},
		{name: "an agent on another cluster does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: agents(naming("other", "compute-b", copyName, false)), want: []string{copyName}},
		{name: "a local agent does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: agents(naming("other", "", copyName, false)), want: []string{copyName}},
		{name: "an agent naming another copy does not keep it", mirrors: []corev1.Secret{mirror(copyName, true)},
			agents: agents(naming("other", "compute-a", "old-copy", false)), want: []string{copyName}},
		{name: "only the copy the agent names goes", mirrors: []corev1.Secret{mirror("z-nova-metadata-agent-secret", true), mirror(copyName, true)},
			agents: agents(), want: []string{copyName}},
		{name: "an agent without a shared secret reaps nothing", me: func() *neutronv1alpha1.NeutronMetadataAgent {
			a := naming("me", "compute-a", "", true)
			a.Spec.NovaMetadata.SharedSecretRef = nil
			return &a
		}(), mirrors: []corev1.Secret{mirror(copyName, true)}, agents: agents()},
		{name: "an unlabelled Secret is never reaped", mirrors: []corev1.Secret{mirror(copyName, false)}, agents: agents()},
		{name: "the mirror label alone is not enough", mirrors: []corev1.Secret{relabelled(childwriter.OwnerKindLabel, "")}, agents: agents()},
		{name: "a mirror label other than true", mirrors: []corev1.Secret{relabelled(neutronv1alpha1.MetadataSharedSecretMirrorLabel, "false")}, agents: agents()},
		{name: "owned by another kind", mirrors: []corev1.Secret{relabelled(childwriter.OwnerKindLabel, "Nova")}, agents: agents()},
		{name: "owned from another namespace", mirrors: []corev1.Secret{relabelled(childwriter.OwnerNamespaceLabel, "elsewhere")}, agents: agents()},
		{name: "a name that is not its owner's copy", mirrors: []corev1.Secret{misnamed}, agents: agents()},
		{name: "another namespace is not the agent's", mirrors: []corev1.Secret{elsewhere}, agents: agents()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := &me
			if tt.me != nil {
				agent = tt.me
			}
			got := MirrorsToReap(agent, tt.mirrors, tt.agents)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("reap = %v, want %v", got, tt.want)
			}
		})
	}
}
