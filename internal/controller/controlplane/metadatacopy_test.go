package controlplane

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

func TestMetadataAgentTargets(t *testing.T) {
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "controlplane", Namespace: "openstack"}}
	agent := func(name, ns, cluster, secret string, deleting bool) neutronv1alpha1.NeutronMetadataAgent {
		a := neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if cluster != "" {
			a.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
		}
		if secret != "" {
			a.Spec.NovaMetadata.SharedSecretRef = &neutronv1alpha1.SecretKeyRef{Name: secret}
		}
		if deleting {
			now := metav1.Now()
			a.DeletionTimestamp = &now
		}
		return a
	}
	copyName := "controlplane-nova-metadata-agent-secret"
	agents := []neutronv1alpha1.NeutronMetadataAgent{
		agent("b1", "openstack", "compute-b", copyName, false),
		agent("a1", "openstack", "compute-a", copyName, false),
		agent("a2", "openstack", "compute-a", copyName, false),
		agent("local", "openstack", "", copyName, false),
		agent("own", "openstack", "compute-c", "my-secret", false),
		agent("gone", "openstack", "compute-d", copyName, true),
		agent("elsewhere", "other", "compute-e", copyName, false),
		agent("none", "openstack", "compute-f", "", false),
	}
	if got, want := MetadataAgentTargets(cp, agents), []string{"compute-a", "compute-b"}; !slices.Equal(got, want) {
		t.Errorf("targets = %v, want %v", got, want)
	}
	if got := MetadataAgentTargets(cp, nil); len(got) != 0 {
		t.Errorf("no agents: targets = %v", got)
	}
	// A leaving agent keeps its cluster's copy until it is gone, but is
	// no target: nothing is written for it.
	agents = append(agents, agent("b2", "openstack", "compute-b", copyName, true), agent("mine", "openstack", "compute-g", "my-secret", true))
	if got, want := DepartingAgentClusters(cp, agents), []string{"compute-b", "compute-d"}; !slices.Equal(got, want) {
		t.Errorf("departing = %v, want %v", got, want)
	}
}

func TestBuildMetadataAgentSecret(t *testing.T) {
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "controlplane", Namespace: "openstack"}}
	s := BuildMetadataAgentSecret(cp, []byte("s3cret"))
	if s.Name != "controlplane-nova-metadata-agent-secret" || s.Namespace != "openstack" || len(s.Data) != 1 ||
		string(s.Data["shared_secret"]) != "s3cret" || s.Labels[neutronv1alpha1.MetadataSharedSecretMirrorLabel] != "true" {
		t.Errorf("copy = %s/%s %v %v", s.Namespace, s.Name, s.Labels, s.Data)
	}
}
