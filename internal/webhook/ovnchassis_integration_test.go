package webhook_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// ovnChassisWebhook is the name the apiserver quotes when the webhook, not
// the schema, refuses an OVNChassis.
const ovnChassisWebhook = `admission webhook "vovnchassis.openstack.c5c3.io" denied the request`

// newChassis returns a chassis of the central "central" on the labelled
// nodes of the management cluster.
func newChassis(name string) *ovnv1alpha1.OVNChassis {
	ch := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	ch.Spec.CentralRef.Name = "central"
	ch.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
	return ch
}

// The chassis's schema rules refuse on a real apiserver with the spec's
// messages, and the webhook refuses what the schema cannot see.
func TestIntegrationOVNChassisAdmission(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client

	creates := []struct {
		name   string
		mutate func(*ovnv1alpha1.OVNChassis)
		want   []refusal
	}{
		{name: "maxUnavailable with OnDelete", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.UpdateStrategy = ovnv1alpha1.ChassisUpdateStrategy{Type: ovnv1alpha1.OnDeleteStrategy, MaxUnavailable: ptr.To[int32](1)}
		}, want: []refusal{{false, "spec.updateStrategy", "maxUnavailable applies to RollingUpdate only"}}},
		{name: "empty node selector", mutate: func(ch *ovnv1alpha1.OVNChassis) { ch.Spec.NodeSelector = map[string]string{} },
			want: []refusal{{false, "spec.nodeSelector", "should have at least 1 properties"}}},
		{name: "bridge mapped twice", mutate: func(ch *ovnv1alpha1.OVNChassis) {
			ch.Spec.BridgeMappings = []ovnv1alpha1.BridgeMapping{{PhysicalNetwork: "physnet1", Bridge: "br-ex"}, {PhysicalNetwork: "physnet2", Bridge: "br-ex"}}
		}, want: []refusal{{true, "spec.bridgeMappings[1].bridge", `bridge is already mapped to physical network "physnet1"`}}},
	}
	for _, tt := range creates {
		t.Run(tt.name, func(t *testing.T) {
			ch := newChassis("chassis-invalid")
			tt.mutate(ch)
			err := c.Create(ctx, ch)
			if err == nil {
				_ = c.Delete(ctx, ch)
			}
			assertOVNRefused(t, err, ovnChassisWebhook, tt.want)
		})
	}

	chassis := newChassis("chassis")
	if err := c.Create(ctx, chassis); err != nil {
		t.Fatalf("a valid chassis was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, chassis) })

	ch := &ovnv1alpha1.OVNChassis{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(chassis), ch); err != nil {
		t.Fatal(err)
	}
	ch.Spec.CentralRef.Name = "another-central"
	assertOVNRefused(t, c.Update(ctx, ch), ovnChassisWebhook, []refusal{{false, "spec", "centralRef is immutable"}})
}
