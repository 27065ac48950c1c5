package webhook_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// ovnCentralWebhook is the name the apiserver quotes when the webhook, not
// the schema, refuses an OVNCentral.
const ovnCentralWebhook = `admission webhook "vovncentral.openstack.c5c3.io" denied the request`

// newCentral returns a central with nothing set, the smallest a user
// writes: it runs on a CA of its own.
func newCentral(name string) *ovnv1alpha1.OVNCentral {
	return &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
}

// The CRD schema's own rules refuse an invalid central on a real apiserver
// with the spec's messages, before the webhook is asked; the webhook's
// rules answer for what the schema cannot see. The smallest central is
// admitted and stored with the schema's defaults.
func TestIntegrationOVNCentralAdmission(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client

	creates := []struct {
		name   string
		mutate func(*ovnv1alpha1.OVNCentral)
		want   []refusal
	}{
		{name: "even replicas", mutate: func(oc *ovnv1alpha1.OVNCentral) { oc.Spec.Southbound.Replicas = ptr.To[int32](2) },
			want: []refusal{{false, "spec.southbound.replicas", "replicas must be odd"}}},
		{name: "relay node port without externallyReachable", mutate: func(oc *ovnv1alpha1.OVNCentral) {
			oc.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{NodePort: ptr.To[int32](30661)}
		}, want: []refusal{{false, "spec.relay", "nodePort is only allowed with externallyReachable"}}},
		{name: "name over 45 characters", mutate: func(oc *ovnv1alpha1.OVNCentral) { oc.Name = strings.Repeat("o", 46) },
			want: []refusal{{true, "metadata.name", "name must be at most 45 characters"}}},
		{name: "relay node port inside the southbound members", mutate: func(oc *ovnv1alpha1.OVNCentral) {
			oc.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{ExternallyReachable: true, NodePort: ptr.To[int32](30652)}
		}, want: []refusal{{true, "spec.relay.nodePort", "nodePort 30652 falls inside the southbound member node ports 30651-30653"}}},
	}
	for _, tt := range creates {
		t.Run(tt.name, func(t *testing.T) {
			oc := newCentral("central-invalid")
			tt.mutate(oc)
			err := c.Create(ctx, oc)
			if err == nil {
				_ = c.Delete(ctx, oc)
			}
			assertOVNRefused(t, err, ovnCentralWebhook, tt.want)
		})
	}

	central := newCentral("central")
	if err := c.Create(ctx, central); err != nil {
		t.Fatalf("the smallest central was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, central) })
	nb := central.Spec.Northbound
	if *nb.Replicas != 3 || nb.Storage.Size != "1Gi" || *nb.ElectionTimerMs != 1000 || *central.Spec.Northd.Replicas != 3 ||
		central.Spec.TLS.IssuerRef != nil || central.Spec.Backup != nil || central.Spec.Image != nil {
		t.Errorf("stored spec lacks the schema's defaults, or gained resolved ones: %+v", central.Spec)
	}
	named := newCentral("central-named")
	named.Spec.TLS.IssuerRef = &ovnv1alpha1.IssuerReference{Name: "ovn-ca"}
	if err := c.Create(ctx, named); err != nil {
		t.Fatalf("a central naming a ClusterIssuer was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, named) })
	if k := named.Spec.TLS.IssuerRef.Kind; k != ovnv1alpha1.ClusterIssuerKind {
		t.Errorf("stored issuer kind = %q, want the schema's default %s", k, ovnv1alpha1.ClusterIssuerKind)
	}

	updates := []struct {
		name   string
		mutate func(*ovnv1alpha1.OVNCentral)
		want   []refusal // nil: admitted
	}{
		{name: "replicas changed", mutate: func(oc *ovnv1alpha1.OVNCentral) { oc.Spec.Northbound.Replicas = ptr.To[int32](5) },
			want: []refusal{{false, "spec.northbound", "replicas is immutable: Raft membership changes are not supported"}}},
		{name: "electionTimerMs changed", mutate: func(oc *ovnv1alpha1.OVNCentral) { oc.Spec.Southbound.ElectionTimerMs = ptr.To[int32](2000) },
			want: []refusal{{false, "spec.southbound", "electionTimerMs is immutable: it is applied when the clustered database is created"}}},
		{name: "storage changed", mutate: func(oc *ovnv1alpha1.OVNCentral) { oc.Spec.Southbound.Storage.Size = "2Gi" },
			want: []refusal{{false, "spec.southbound", "storage is immutable: volumeClaimTemplates cannot change"}}},
		{name: "node port ranges overlap", mutate: func(oc *ovnv1alpha1.OVNCentral) { oc.Spec.Southbound.NodePortBase = ptr.To[int32](30642) },
			want: []refusal{{true, "spec.southbound.nodePortBase", "northbound and southbound nodePort ranges overlap"}}},
		{name: "the databases become externally reachable", mutate: func(oc *ovnv1alpha1.OVNCentral) {
			oc.Spec.Northbound.ExternallyReachable, oc.Spec.Southbound.ExternallyReachable = true, true
		}},
	}
	for _, tt := range updates {
		t.Run("update: "+tt.name, func(t *testing.T) {
			oc := &ovnv1alpha1.OVNCentral{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(central), oc); err != nil {
				t.Fatal(err)
			}
			tt.mutate(oc)
			err := c.Update(ctx, oc)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("a valid update was refused: %v", err)
				}
				return
			}
			assertOVNRefused(t, err, ovnCentralWebhook, tt.want)
		})
	}
}

// assertOVNRefused fails unless err refuses the object through the wanted
// layer, naming every wanted field with its text. webhook is how the
// apiserver quotes the kind's webhook.
func assertOVNRefused(t *testing.T, err error, webhook string, want []refusal) {
	t.Helper()
	if err == nil {
		t.Fatal("admitted")
	}
	msg := err.Error()
	for _, w := range want {
		if byWebhook := strings.Contains(msg, webhook); byWebhook != w.byWebhook {
			t.Errorf("refused by the webhook: %v, want %v: %s", byWebhook, w.byWebhook, msg)
		}
		if !strings.Contains(msg, w.field+":") || !strings.Contains(msg, w.detail) {
			t.Errorf("error %q does not name %s with %q", msg, w.field, w.detail)
		}
	}
}
