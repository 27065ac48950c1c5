package webhook_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// metadataAgentWebhook is the name the apiserver quotes when the webhook,
// not the schema, refuses a NeutronMetadataAgent.
const metadataAgentWebhook = `admission webhook "vneutronmetadataagent.openstack.c5c3.io" denied the request`

// newMetadataAgent returns an agent with only the required fields set, as
// a user writes the smallest one. Its chassis need not exist: admission
// does not look it up.
func newMetadataAgent(name string) *neutronv1alpha1.NeutronMetadataAgent {
	a := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	a.Spec.OpenStackRelease = "2026.1"
	a.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	a.Spec.ChassisRef.Name = "chassis"
	return a
}

// The agent's CEL rules refuse on a real apiserver with the spec's
// messages, before the webhook is asked, and the webhook refuses what the
// schema cannot see. The smallest agent is stored as written, without the
// defaults the controller resolves.
func TestIntegrationNeutronMetadataAgentAdmission(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client

	creates := []struct {
		name   string
		mutate func(*neutronv1alpha1.NeutronMetadataAgent)
		want   []refusal
	}{
		{name: "CA bundle with protocol http", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec.NovaMetadata = neutronv1alpha1.NovaMetadataSpec{Protocol: neutronv1alpha1.ProtocolHTTP,
				CABundleSecretRef: &neutronv1alpha1.SecretKeyRef{Name: "nova-metadata-ca"}}
		}, want: []refusal{{false, "spec.novaMetadata", "caBundleSecretRef requires protocol https"}}},
		{name: "host is a URL", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec.NovaMetadata.Host = "https://nova-metadata.example.com"
		}, want: []refusal{{true, "spec.novaMetadata.host", "host must be a host name or an IP address"}}},
		{name: "release older than 2026.1", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2025.2" },
			want: []refusal{{true, "spec.openStackRelease", "openStackRelease must be at least 2026.1"}}},
	}
	for _, tt := range creates {
		t.Run(tt.name, func(t *testing.T) {
			a := newMetadataAgent("agent-invalid")
			tt.mutate(a)
			err := c.Create(ctx, a)
			if err == nil {
				_ = c.Delete(ctx, a)
			}
			assertOVNRefused(t, err, metadataAgentWebhook, tt.want)
		})
	}

	agent := newMetadataAgent("agent")
	if err := c.Create(ctx, agent); err != nil {
		t.Fatalf("the smallest agent was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, agent) })
	if n := agent.Spec.NovaMetadata; n.Port != nil || n.Protocol != "" || agent.Spec.MetadataWorkers != nil {
		t.Errorf("stored spec gained resolved defaults: %+v", agent.Spec)
	}

	a := &neutronv1alpha1.NeutronMetadataAgent{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(agent), a); err != nil {
		t.Fatal(err)
	}
	a.Spec.ChassisRef.Name = "another-chassis"
	assertOVNRefused(t, c.Update(ctx, a), metadataAgentWebhook, []refusal{{false, "spec", "chassisRef is immutable"}})
}
