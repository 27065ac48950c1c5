package neutronmetadataagent_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/anvil/anvil/internal/dev/kstatustest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

// metadataAgentWebhook is the name of the agent's admission webhook.
const metadataAgentWebhook = "vneutronmetadataagent.openstack.c5c3.io"

// An agent from a foreign image that got past admission (the webhook taken
// out) is refused again by the controller before it writes anything, with
// the field in DaemonSetReady's message; fixing the image lets the pass go
// on, here to the chassis it names.
func TestIntegrationAgentPolicyWithoutTheWebhook(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	restore := e.Management.WithoutWebhook(t, metadataAgentWebhook)
	a := newAgent(t, "policy-agent", "policy-no-chassis", func(a *neutronv1alpha1.NeutronMetadataAgent) {
		a.Spec.Image = anvilmeta.ImageSpec{Repository: "registry.invalid/evil/neutron", Tag: "1"}
	})
	restore()

	got := waitAgent(t, a.Name, neutronv1alpha1.DaemonSetReadyCondition, anvilmeta.RefusedByPolicyReason)
	// A refused spec is input no retry fixes: GitOps tools read it Failed.
	kstatustest.Await(t, e.Management.Client, got.DeepCopy(), status.FailedStatus)
	msg := condition(got, neutronv1alpha1.DaemonSetReadyCondition).Message
	if !strings.Contains(msg, "spec.image.repository") || !strings.Contains(msg, "registry.invalid/evil/neutron is not allowed") {
		t.Errorf("DaemonSetReady message %q does not name the field and the image", msg)
	}
	assertNoDaemonSet(t, e.ComputeCluster("compute-a"), a.Name)

	live := &neutronv1alpha1.NeutronMetadataAgent{}
	if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(a), live); err != nil {
		t.Fatal(err)
	}
	live.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	if err := e.Management.Client.Update(ctx, live); err != nil {
		t.Fatalf("fixing the image: %v", err)
	}
	waitAgent(t, a.Name, neutronv1alpha1.ChassisReadyCondition, neutronv1alpha1.ChassisNotFoundReason)
}
