package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// The privileged kinds that came after NovaCompute obey its policy at
// admission: the review's story, an OVNChassis from a foreign image that
// tolerates every taint, is refused naming each field, and so is a chassis
// that selects control-plane nodes and an agent from a foreign image.
func TestIntegrationPrivilegedKindsPolicy(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client
	foreign := &anvilmeta.ImageSpec{Repository: "registry.invalid/evil/ovn", Tag: "1"}

	chassis := []struct {
		name   string
		mutate func(*ovnv1alpha1.OVNChassis)
		want   []refusal
	}{
		{name: "the review's story", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.Image = foreign
			ch.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, want: []refusal{
			{true, "spec.image.repository", "repository registry.invalid/evil/ovn is not allowed"},
			{true, "spec.tolerations[0]", "operator Exists without a key"},
		}},
		{name: "the control-plane taint", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}}
		}, want: []refusal{{true, "spec.tolerations[0]", "control-plane taint"}}},
		{name: "control-plane nodes as gateways", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.Gateway = &ovnv1alpha1.ChassisGatewaySpec{NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": ""}}
		}, want: []refusal{{true, "spec.gateway.nodeSelector[node-role.kubernetes.io/control-plane]", "selects control-plane nodes"}}},
	}
	for _, tt := range chassis {
		t.Run(tt.name, func(t *testing.T) {
			ch := newChassis("chassis-policy")
			tt.mutate(ch)
			err := c.Create(ctx, ch)
			if err == nil {
				_ = c.Delete(ctx, ch)
			}
			assertOVNRefused(t, err, ovnChassisWebhook, tt.want)
		})
	}

	agent := newMetadataAgent("agent-policy")
	agent.Spec.Image = anvilmeta.ImageSpec{Repository: "registry.invalid/evil/neutron", Tag: "1"}
	err := c.Create(ctx, agent)
	if err == nil {
		_ = c.Delete(ctx, agent)
	}
	assertOVNRefused(t, err, metadataAgentWebhook, []refusal{{true, "spec.image.repository", "is not allowed"}})
}

// A chassis and an agent are admitted only in a namespace opted in to
// privileged workloads, like a pool; the refusal names metadata.namespace
// and the label.
func TestIntegrationPrivilegedKindsNamespaceOptIn(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-y"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, ns) })
	want := []refusal{{true, "metadata.namespace", "namespace team-y does not allow privileged pools, chassis or metadata agents"}}

	ch := newChassis("chassis-team-y")
	ch.Namespace = ns.Name
	assertOVNRefused(t, c.Create(ctx, ch.DeepCopy()), ovnChassisWebhook, want)
	agent := newMetadataAgent("agent-team-y")
	agent.Namespace = ns.Name
	assertOVNRefused(t, c.Create(ctx, agent.DeepCopy()), metadataAgentWebhook, want)

	setLabel(t, c, ns, "true")
	for _, obj := range []client.Object{ch, agent} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("%s in an opted-in namespace was refused: %v", obj.GetName(), err)
		}
		t.Cleanup(func() { _ = c.Delete(ctx, obj) })
	}

	// Without the label, a change that does not touch what runs passes;
	// one that does is refused.
	setLabel(t, c, ns, "")
	workers := agent.DeepCopy()
	workers.Spec.MetadataWorkers = ptr.To[int32](2)
	if err := c.Update(ctx, workers); err != nil {
		t.Fatalf("a change of workers after the label was removed was refused: %v", err)
	}
	// A new tag of the same repository is no decision of the policy's; a
	// new repository is.
	image := workers.DeepCopy()
	image.Spec.Image.Repository = "ghcr.io/c5c3/neutron-metadata"
	assertOVNRefused(t, c.Update(ctx, image), metadataAgentWebhook, want)
}
