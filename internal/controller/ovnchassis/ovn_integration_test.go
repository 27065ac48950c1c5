package ovnchassis_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/ovnchassis"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// A three-member Northbound and Southbound come up as real ovsdb-server
// processes and elect a leader; the central publishes each member's node
// address in ordinal order once the databases are externally reachable;
// and a client presenting the central's client identity creates a switch
// there that northd translates into the Southbound.
func TestIntegrationCentralRunsRaftClusters(t *testing.T) {
	e := startStack(t)
	testenv.StartCertManager(t, e.Management)
	ctx := context.Background()
	c := newCentral(t, "raft", 3, 32641, 32651)
	c = waitCentral(t, c.Name, anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 5*time.Minute)
	if n := len(strings.Split(c.Status.Northbound.InternalDBAddress, ",")); n != 3 || c.Status.Northbound.DBAddress != "" {
		t.Errorf("northbound status = %+v, want three internal addresses and no external one", c.Status.Northbound)
	}

	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Northbound.ExternallyReachable, c.Spec.Southbound.ExternallyReachable = true, true
	if err := e.Management.Client.Patch(ctx, c, patch); err != nil {
		t.Fatal(err)
	}
	c = waitCentral(t, c.Name, ovnv1alpha1.EndpointsReadyCondition, ovnv1alpha1.EndpointsPublishedReason, 2*time.Minute)
	wantNB := "ssl:127.0.0.1:32641,ssl:127.0.0.1:32642,ssl:127.0.0.1:32643"
	wantSB := "ssl:127.0.0.1:32651,ssl:127.0.0.1:32652,ssl:127.0.0.1:32653"
	if c.Status.Northbound.DBAddress != wantNB || c.Status.Southbound.DBAddress != wantSB {
		t.Fatalf("dbAddress = %q and %q, want %q and %q", c.Status.Northbound.DBAddress, c.Status.Southbound.DBAddress, wantNB, wantSB)
	}

	tls := clientTLS(t, c.Status.ClientSecretName)
	for _, db := range []struct{ schema, addresses string }{{"OVN_Northbound", wantNB}, {"OVN_Southbound", wantSB}} {
		ovntest.Eventually(t, time.Minute, db.schema+" has one leader among three connected members", func() error {
			leaders := 0
			for _, a := range strings.Split(db.addresses, ",") {
				leader, err := leaderOf(t, tls, a, db.schema)
				if err != nil {
					return err
				}
				if leader {
					leaders++
				}
			}
			if leaders != 1 {
				return errorf("%d leaders", leaders)
			}
			return nil
		})
	}

	nb := append([]string{"--db=" + wantNB, "--timeout=30"}, tls...)
	if _, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "ls-add", "sw-suite")...); err != nil {
		t.Fatal(err)
	}
	sb := append([]string{"--db=" + wantSB, "--timeout=30", "--no-leader-only"}, tls...)
	ovntest.Eventually(t, time.Minute, "northd translates the switch into the southbound", func() error {
		out, err := ovntest.OVS(t, "ovn-sbctl", append(sb, "--bare", "--columns=external_ids", "list", "Datapath_Binding")...)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "name=sw-suite") {
			return errorf("no datapath for sw-suite: %q", out)
		}
		return nil
	})
}

// A chassis on compute-a whose central on the management cluster does not
// publish its databases outside it says so; once the central does, the
// chassis on compute-a's node registers in the Southbound under the node's
// name, with a copy of the central's client identity that follows a
// renewal; deleting the chassis removes its DaemonSets and the copy, and
// nothing else.
func TestIntegrationChassisOnAComputeCluster(t *testing.T) {
	e := startStack(t)
	testenv.StartCertManager(t, e.Management)
	ctx := context.Background()
	compute := e.ComputeCluster("compute-a")
	labelNode(t, compute, hvNode, chassisLabel)

	central := newCentral(t, "hub", 1, 32661, 32671)
	central = waitCentral(t, central.Name, anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 5*time.Minute)
	decoy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-the-chassis", Namespace: testenv.WorkloadNamespace}}
	if err := compute.Client.Create(ctx, decoy); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	ch := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "hub-chassis", Namespace: testenv.WorkloadNamespace}}
	ch.Spec.CentralRef.Name = central.Name
	ch.Spec.NodeSelector = chassisLabel
	ch.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: compute.Name}
	if err := e.Management.Client.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}
	got := waitChassis(t, ch.Name, ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.CentralNotExternallyReachableReason, time.Minute)
	msg := conditionMessage(got.Status.Conditions, ovnv1alpha1.CentralReadyCondition)
	for _, want := range []string{"spec.northbound.externallyReachable", "spec.southbound.externallyReachable"} {
		if !strings.Contains(msg, want) {
			t.Errorf("CentralReady message %q does not name %s", msg, want)
		}
	}

	patch := client.MergeFrom(central.DeepCopy())
	central.Spec.Northbound.ExternallyReachable, central.Spec.Southbound.ExternallyReachable = true, true
	if err := e.Management.Client.Patch(ctx, central, patch); err != nil {
		t.Fatal(err)
	}
	waitChassis(t, ch.Name, anvilmeta.ReadyCondition, anvilmeta.AllReadyReason, 5*time.Minute)
	central = waitCentral(t, central.Name, ovnv1alpha1.EndpointsReadyCondition, ovnv1alpha1.EndpointsPublishedReason, time.Minute)

	tls := clientTLS(t, central.Status.ClientSecretName)
	sb := append([]string{"--db=" + central.Status.Southbound.DBAddress, "--timeout=30"}, tls...)
	ovntest.Eventually(t, time.Minute, "ovn-sbctl show lists the node's chassis under its name", func() error {
		out, err := ovntest.OVS(t, "ovn-sbctl", append(sb, "show")...)
		if err != nil {
			return err
		}
		if !strings.Contains(out, `hostname: `+hvNode) && !strings.Contains(out, `hostname: "`+hvNode+`"`) {
			return errorf("no chassis with hostname %s: %q", hvNode, out)
		}
		return nil
	})

	got = waitChassis(t, ch.Name, ovnv1alpha1.MaintenanceReadyCondition, ovnv1alpha1.MaintenanceIdleReason, time.Minute)
	assertNodeIdentity(t, compute, got, hvNode, sb)

	// Settled, a pass over the central or the chassis writes nothing.
	assertSettledPassWritesNothing(t, map[*testenv.Cluster][]client.Object{
		e.Management: {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.WorkloadNamespace, Name: central.Name + "-central-scripts"}}},
		compute:      {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.WorkloadNamespace, Name: ovnchassis.NodesName(got)}}},
	})

	copyName := ovnchassis.ClientSecretName(got)
	if got.Status.ClientSecretName != copyName {
		t.Errorf("status.clientSecretName = %q, want %q", got.Status.ClientSecretName, copyName)
	}
	assertCopyEqualsSource(t, compute, copyName, central.Status.ClientSecretName, nil)

	before := secretData(t, e.Management, central.Status.ClientSecretName)
	renew(t, e.Management, central.Status.ClientSecretName)
	assertCopyEqualsSource(t, compute, copyName, central.Status.ClientSecretName, before["tls.crt"])

	nbTLS := append([]string{"--db=" + central.Status.Northbound.DBAddress, "--timeout=30"}, tls...)
	assertEvacuationOnManagement(t, compute, got, hvNode, nbTLS)

	// Draining the node: without its label, its chassis leaves the
	// Southbound through the chassis-del Job, and its entry goes.
	unlabelNode(t, compute, hvNode, ovnchassis.ChassisNodeLabel)
	ovntest.Eventually(t, 2*time.Minute, "the drained node's entry goes", func() error {
		cur := &ovnv1alpha1.OVNChassis{}
		if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(got), cur); err != nil {
			return err
		}
		if len(cur.Status.Nodes) != 0 || conditionReason(cur.Status.Conditions, ovnv1alpha1.MaintenanceReadyCondition) != ovnv1alpha1.MaintenanceIdleReason {
			return errorf("nodes %+v, MaintenanceReady %s", cur.Status.Nodes, conditionReason(cur.Status.Conditions, ovnv1alpha1.MaintenanceReadyCondition))
		}
		return nil
	})
	out, err := ovntest.OVS(t, "ovn-sbctl", append(sb, "--bare", "--columns=hostname", "list", "Chassis")...)
	if err != nil || strings.Contains(out, hvNode) {
		t.Errorf("the drained node's chassis is still in the southbound: %q (%v)", out, err)
	}
	assertIdentityGone(t, compute, got, hvNode)

	if err := e.Management.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: ovnchassis.OVSName(got)}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: ovnchassis.ControllerName(got)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: copyName}},
	} {
		obj.SetNamespace(testenv.WorkloadNamespace)
		ovntest.Eventually(t, time.Minute, "compute-a loses "+obj.GetName(), func() error {
			err := compute.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return errorf("still there (%v)", err)
		})
	}
	if err := compute.Client.Get(ctx, client.ObjectKeyFromObject(decoy), decoy); err != nil {
		t.Errorf("the unlabelled ConfigMap on compute-a went with the chassis: %v", err)
	}
	if err := compute.Client.Get(ctx, client.ObjectKey{Name: hvNode}, &corev1.Node{}); err != nil {
		t.Errorf("the node went with the chassis: %v", err)
	}
	if len(secretData(t, e.Management, central.Status.ClientSecretName)["tls.crt"]) == 0 {
		t.Error("the central's own client Secret went with the chassis's copy")
	}
	assertNoKeyLeak(t, before["tls.key"], secretData(t, e.Management, central.Status.ClientSecretName)["tls.key"])
}

// assertNoKeyLeak fails when a private key, or any PEM private key block,
// appears in the operator's log, an event on either cluster, or a condition
// of a central or chassis.
func assertNoKeyLeak(t *testing.T, keys ...[]byte) {
	t.Helper()
	ctx := context.Background()
	texts := append([]string{logs.String()}, env.Management.EventMessages(t)...)
	texts = append(texts, env.ComputeCluster("compute-a").EventMessages(t)...)
	centrals := &ovnv1alpha1.OVNCentralList{}
	chassis := &ovnv1alpha1.OVNChassisList{}
	if err := env.Management.Client.List(ctx, centrals); err != nil {
		t.Fatal(err)
	}
	if err := env.Management.Client.List(ctx, chassis); err != nil {
		t.Fatal(err)
	}
	for _, c := range centrals.Items {
		texts = append(texts, testenv.ConditionMessages(c.Status.Conditions)...)
	}
	for _, c := range chassis.Items {
		texts = append(texts, testenv.ConditionMessages(c.Status.Conditions)...)
	}
	secrets := []string{"PRIVATE KEY"}
	for _, k := range keys {
		secrets = append(secrets, string(k))
	}
	testenv.AssertNoLeak(t, texts, secrets)
}

// assertCopyEqualsSource waits until the copy on compute carries exactly
// the source's CA, and no key, labelled as the client identity; with
// notCert, until the source's certificate is no longer notCert as well.
func assertCopyEqualsSource(t *testing.T, compute *testenv.Cluster, copyName, source string, notCert []byte) {
	t.Helper()
	ovntest.Eventually(t, 2*time.Minute, "the copy equals the central's client Secret", func() error {
		src := secretData(t, env.Management, source)
		if notCert != nil && string(src["tls.crt"]) == string(notCert) {
			return errorf("the source still carries the old certificate")
		}
		cp := &corev1.Secret{}
		if err := compute.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: copyName}, cp); err != nil {
			return err
		}
		want := map[string][]byte{"ca.crt": src["ca.crt"]}
		if !maps.EqualFunc(cp.Data, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			return errorf("the copy's keys differ from the source's")
		}
		if cp.Labels["app.kubernetes.io/component"] != ovnchassis.ClientSecretComponent {
			return errorf("the copy's labels are %v", cp.Labels)
		}
		return nil
	})
}

// secretData reads a Secret's data on c.
func secretData(t *testing.T, c *testenv.Cluster, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// renew asks cert-manager to issue the Certificate again now.
func renew(t *testing.T, c *testenv.Cluster, name string) {
	t.Helper()
	crt := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.WorkloadNamespace, Name: name}}
	if err := testenv.TriggerRenewal(context.Background(), c.Client, crt); err != nil {
		t.Fatal(err)
	}
}

// labelNode sets labels on a node of c.
func labelNode(t *testing.T, c *testenv.Cluster, name string, labels map[string]string) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	maps.Copy(n.Labels, labels)
	if err := c.Client.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}

// unlabelNode removes a label from a node of c.
func unlabelNode(t *testing.T, c *testenv.Cluster, name, label string) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	delete(n.Labels, label)
	if err := c.Client.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}

// conditionReason returns a condition's reason.
func conditionReason(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return c.Reason
		}
	}
	return ""
}

// conditionMessage returns a condition's message.
func conditionMessage(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}
