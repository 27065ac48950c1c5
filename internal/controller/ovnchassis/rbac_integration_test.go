package ovnchassis_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/ovnchassis"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// Two nodes run one chassis. Each node's key, the one its ovn-controller
// and metadata agent present, may change that node's Chassis row in the
// Southbound and nothing of the other node's: not its row, not its
// deletion, not a chassis of another name. The central's client key, the
// one copied to compute clusters for the Northbound, cannot delete a
// chassis either, and the listener without a role is in no Service that
// leaves the cluster.
func TestIntegrationChassisKeyWritesOnlyItsOwnRows(t *testing.T) {
	e := startStack(t)
	testenv.StartCertManager(t, e.Management)
	ctx := context.Background()
	central := newCentral(t, "rbac", 1, 32721, 32731)
	reachable(t, central)
	central = waitCentral(t, central.Name, ovnv1alpha1.EndpointsReadyCondition, ovnv1alpha1.EndpointsPublishedReason, 5*time.Minute)

	nodes := mgmtNodes[:2]
	for _, n := range nodes {
		labelNode(t, e.Management, n, chassisLabel)
		t.Cleanup(func() { unlabelNode(t, e.Management, n, ovnchassis.ChassisNodeLabel) })
	}
	ch := &ovnv1alpha1.OVNChassis{}
	ch.Name, ch.Namespace = "rbac-chassis", testenv.WorkloadNamespace
	ch.Spec.CentralRef.Name = central.Name
	ch.Spec.NodeSelector = chassisLabel
	if err := e.Management.Client.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Management.Client.Delete(context.Background(), ch) })
	waitChassis(t, ch.Name, anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 5*time.Minute)
	ch = waitChassis(t, ch.Name, ovnv1alpha1.MaintenanceReadyCondition, ovnv1alpha1.MaintenanceIdleReason, time.Minute)

	sb := "--db=" + central.Status.Southbound.DBAddress
	ids := map[string]string{}
	for _, n := range ch.Status.Nodes {
		ids[n.Name] = n.SystemID
	}
	own, other := ids[nodes[0]], ids[nodes[1]]
	if own == "" || other == "" {
		t.Fatalf("system-ids = %v, want one per node", ids)
	}
	key := identityTLS(t, ch, nodes[0])
	as := func(tls []string, args ...string) (string, error) {
		return ovntest.OVS(t, "ovn-sbctl", append(append([]string{sb, "--timeout=20"}, tls...), args...)...)
	}
	ovntest.Eventually(t, time.Minute, "both chassis are in the Southbound", func() error {
		out, err := as(key, "--bare", "--columns=name", "list", "Chassis")
		if err != nil || !strings.Contains(out, own) || !strings.Contains(out, other) {
			return errorf("chassis %q (%v)", out, err)
		}
		return nil
	})

	if _, err := as(key, "set", "Chassis", own, "external_ids:anvil-test=own"); err != nil {
		t.Errorf("node %s's key cannot change its own chassis: %v", nodes[0], err)
	}
	for _, attempt := range []struct {
		what string
		tls  []string
		args []string
	}{
		{"change the other node's chassis", key, []string{"set", "Chassis", other, "external_ids:anvil-test=foreign"}},
		{"delete the other node's chassis", key, []string{"chassis-del", other}},
		{"add a chassis of another name", key, []string{"chassis-add", string(uuid.NewUUID()), "geneve", "127.0.0.9"}},
		{"delete a chassis with the central's client key", clientTLS(t, central.Status.ClientSecretName), []string{"chassis-del", other}},
	} {
		out, err := as(attempt.tls, attempt.args...)
		if err == nil || !strings.Contains(out, "RBAC rules for client") {
			t.Errorf("%s: the Southbound allowed it or refused for another reason: %v %q", attempt.what, err, out)
		}
	}
	out, err := as(key, "--bare", "--columns=external_ids", "list", "Chassis", other)
	if err != nil || strings.Contains(out, "anvil-test") {
		t.Errorf("the other node's chassis changed: %q (%v)", out, err)
	}
	assertInternalListenerUnpublished(t, central)
}

// identityTLS writes a node's issued identity to files and returns the
// options that present it.
func identityTLS(t *testing.T, ch *ovnv1alpha1.OVNChassis, node string) []string {
	t.Helper()
	data := secretData(t, env.Management, ovnchassis.IdentityName(ch, node))
	dir := t.TempDir()
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--private-key=" + filepath.Join(dir, "tls.key"), "--certificate=" + filepath.Join(dir, "tls.crt"),
		"--ca-cert=" + filepath.Join(dir, "ca.crt")}
}

// assertInternalListenerUnpublished checks that no Service that leaves
// the cluster carries the Southbound's listener without a role: only the
// headless Service lists it; and that the central's NetworkPolicy admits
// only its northd and relay to it.
func assertInternalListenerUnpublished(t *testing.T, central *ovnv1alpha1.OVNCentral) {
	t.Helper()
	policy := &networkingv1.NetworkPolicy{}
	if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: central.Namespace, Name: central.Name + "-sb"}, policy); err != nil {
		t.Fatalf("the Southbound's NetworkPolicy: %v", err)
	}
	for _, rule := range policy.Spec.Ingress {
		if rule.Ports[0].Port.IntVal == 16642 && len(rule.From) != 2 {
			t.Errorf("the policy admits %+v to the listener without a role, want northd and the relay", rule.From)
		}
	}
	list := &corev1.ServiceList{}
	if err := env.Management.Client.List(context.Background(), list, client.InNamespace(central.Namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": central.Name}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range list.Items {
		for _, p := range svc.Spec.Ports {
			if p.Port == 16642 && (svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != corev1.ClusterIPNone) {
				t.Errorf("Service %s (%s) publishes the listener without a role", svc.Name, svc.Spec.Type)
			}
		}
	}
}
