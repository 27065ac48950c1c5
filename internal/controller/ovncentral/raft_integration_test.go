package ovncentral_test

import (
	"context"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// A central with three members per database forms both Raft clusters on
// real ovsdb-server processes and reports every condition with its
// documented good reason; each database is one cluster with one leader,
// and a client presenting the central's client identity writes the
// Northbound through the members' list, which northd translates into the
// Southbound.
func TestIntegrationCentralFormsRaftClusters(t *testing.T) {
	t.Parallel()
	startStack(t)
	c := newCentral(t, "ocform", 3, 31741, 31751)
	c = waitReady(t, c.Name, 6*time.Minute)

	want := map[string]string{
		ovnv1alpha1.TLSReadyCondition:        ovnv1alpha1.CertificatesIssuedReason,
		ovnv1alpha1.NorthboundReadyCondition: ovnv1alpha1.StatefulSetReadyReason,
		ovnv1alpha1.SouthboundReadyCondition: ovnv1alpha1.StatefulSetReadyReason,
		ovnv1alpha1.EndpointsReadyCondition:  ovnv1alpha1.EndpointsPublishedReason,
		ovnv1alpha1.NorthdReadyCondition:     ovnv1alpha1.DeploymentReadyReason,
		ovnv1alpha1.RelayReadyCondition:      ovnv1alpha1.RelayNotRequiredReason,
		ovnv1alpha1.BackupReadyCondition:     ovnv1alpha1.BackupSuspendedReason,
		ovnv1alpha1.VPAReadyCondition:        ovnv1alpha1.VPANotRequiredReason,
		anvilmeta.ReadyCondition:             anvilmeta.AllReadyReason,
	}
	for typ, reason := range want {
		got := apimeta.FindStatusCondition(c.Status.Conditions, typ)
		if got == nil || got.Status != metav1.ConditionTrue || got.Reason != reason || got.ObservedGeneration != c.Generation {
			t.Errorf("condition %s = %+v, want True %s for generation %d", typ, got, reason, c.Generation)
		}
	}
	if c.Status.ObservedGeneration != c.Generation {
		t.Errorf("status.observedGeneration = %d, want %d", c.Status.ObservedGeneration, c.Generation)
	}
	if c.Status.Northbound.ReadyReplicas != 3 || c.Status.Southbound.ReadyReplicas != 3 {
		t.Errorf("ready members = %d nb and %d sb, want 3 each", c.Status.Northbound.ReadyReplicas, c.Status.Southbound.ReadyReplicas)
	}
	if c.Status.ClientSecretName != c.Name+"-client" {
		t.Errorf("clientSecretName = %q, want %q", c.Status.ClientSecretName, c.Name+"-client")
	}
	if c.Status.InstalledImage != c.ResolvedImage() {
		t.Errorf("installedImage = %q, want the resolved image %q", c.Status.InstalledImage, c.ResolvedImage())
	}
	if c.Status.Northbound.DBAddress != "" || c.Status.Southbound.DBAddress != "" || c.Status.RelayAddress != "" {
		t.Errorf("status publishes %q, %q and relay %q, want no external and no relay address while nothing asks for them",
			c.Status.Northbound.DBAddress, c.Status.Southbound.DBAddress, c.Status.RelayAddress)
	}

	tls := clientTLS(t, c.Status.ClientSecretName)
	nbAddrs := podAddresses(memberPods(t, c.Name, "nb"), 6641)
	sbAddrs := podAddresses(memberPods(t, c.Name, "sb"), 6642)
	for _, db := range []struct {
		schema    string
		addresses []string
	}{{"OVN_Northbound", nbAddrs}, {"OVN_Southbound", sbAddrs}} {
		ovntest.Eventually(t, 2*time.Minute, db.schema+" is one Raft cluster of three", func() error {
			return oneCluster(t, tls, db.addresses, db.schema)
		})
	}

	nb := append([]string{"--db=" + strings.Join(nbAddrs, ","), "--timeout=30"}, tls...)
	if _, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "ls-add", "sw-formed")...); err != nil {
		t.Fatal(err)
	}
	sb := append([]string{"--db=" + strings.Join(sbAddrs, ","), "--timeout=30", "--no-leader-only"}, tls...)
	ovntest.Eventually(t, 2*time.Minute, "northd translates the switch into the southbound", func() error {
		out, err := ovntest.OVS(t, "ovn-sbctl", append(sb, "--bare", "--columns=external_ids", "list", "Datapath_Binding")...)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "name=sw-formed") {
			return errorf("no datapath for sw-formed: %q", out)
		}
		return nil
	})
}

// Deleting one member's pod replaces it: the StatefulSet recreates the
// member on its claim, the central reports NorthboundReady and Ready False
// under StatefulSetProgressing while it is missing and AllReady again
// once it is back, the member rejoins its cluster under its old server id,
// and it serves what was written before it went and what was written
// while it was away.
func TestIntegrationCentralMemberReplaced(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	ctx := context.Background()
	c := newCentral(t, "ocrepl", 3, 31761, 31771)
	c = waitReady(t, c.Name, 6*time.Minute)
	tls := clientTLS(t, c.Status.ClientSecretName)
	pods := memberPods(t, c.Name, "nb")
	addrs := podAddresses(pods, 6641)
	ovntest.Eventually(t, 2*time.Minute, "the northbound is one Raft cluster of three", func() error {
		return oneCluster(t, tls, addrs, "OVN_Northbound")
	})
	before, err := stateOf(t, tls, addrs[0], "OVN_Northbound")
	if err != nil {
		t.Fatal(err)
	}
	nb := append([]string{"--db=" + strings.Join(addrs, ","), "--timeout=30"}, tls...)
	if _, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "ls-add", "sw-before")...); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := e.Management.Client.Get(ctx, workloadKey("db-"+pods[0].Name), claim); err != nil {
		t.Fatal(err)
	}

	// Every state the central passes through from here on.
	statesSince := recordStates(t, c)

	// Member 0, which created the cluster: it must start from its claim,
	// not create another cluster.
	if err := e.Management.Client.Delete(ctx, pods[0]); err != nil {
		t.Fatal(err)
	}
	ovntest.Eventually(t, 2*time.Minute, "a new pod replaces member 0", func() error {
		p := &corev1.Pod{}
		if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(pods[0]), p); err != nil {
			return err
		}
		if p.UID == pods[0].UID {
			return errorf("member 0 is still the old pod")
		}
		return nil
	})
	// Written while member 0 is away or rejoining: the majority serves it.
	ovntest.Eventually(t, 2*time.Minute, "the remaining majority takes a write", func() error {
		_, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "--may-exist", "ls-add", "sw-during")...)
		return err
	})
	c = waitReady(t, c.Name, 4*time.Minute)
	states := statesSince(c)
	sawMember, sawReady := false, false
	var flow []string
	for _, s := range states {
		if cond := apimeta.FindStatusCondition(s.Status.Conditions, anvilmeta.ReadyCondition); cond != nil {
			if step := cond.Reason; len(flow) == 0 || flow[len(flow)-1] != step {
				flow = append(flow, step)
			}
		}
		if cond := apimeta.FindStatusCondition(s.Status.Conditions, ovnv1alpha1.NorthboundReadyCondition); cond != nil &&
			cond.Status == metav1.ConditionFalse && cond.Reason == ovnv1alpha1.StatefulSetProgressingReason {
			sawMember = true
			if !strings.Contains(cond.Message, "of 3 nb Raft members are ready") {
				t.Errorf("NorthboundReady message %q does not count the members", cond.Message)
			}
		}
		if cond := apimeta.FindStatusCondition(s.Status.Conditions, anvilmeta.ReadyCondition); cond != nil &&
			cond.Status == metav1.ConditionFalse && cond.Reason == ovnv1alpha1.StatefulSetProgressingReason {
			sawReady = true
			if !strings.HasPrefix(cond.Message, ovnv1alpha1.NorthboundReadyCondition) {
				t.Errorf("Ready message %q does not start with %s", cond.Message, ovnv1alpha1.NorthboundReadyCondition)
			}
		}
	}
	if !sawMember || !sawReady {
		t.Errorf("while member 0 was replaced the central never reported NorthboundReady (%v) and Ready (%v) False under %s; it went through %d states",
			sawMember, sawReady, ovnv1alpha1.StatefulSetProgressingReason, len(states))
	}
	t.Logf("Ready went through %v", flow)
	if len(flow) == 0 || flow[len(flow)-1] != anvilmeta.AllReadyReason {
		t.Errorf("the watch did not see Ready end under %s", anvilmeta.AllReadyReason)
	}
	if c.Status.Northbound.ReadyReplicas != 3 {
		t.Errorf("northbound readyReplicas = %d after the replacement, want 3", c.Status.Northbound.ReadyReplicas)
	}
	after := &corev1.PersistentVolumeClaim{}
	if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(claim), after); err != nil {
		t.Fatal(err)
	}
	if after.UID != claim.UID {
		t.Errorf("member 0's claim was replaced (%s, was %s); the member must keep its storage", after.UID, claim.UID)
	}

	newPods := memberPods(t, c.Name, "nb")
	if got := podAddresses(newPods, 6641); got[0] != addrs[0] {
		t.Fatalf("member 0 came back at %s, was %s", got[0], addrs[0])
	}
	ovntest.Eventually(t, 2*time.Minute, "member 0 rejoined the same cluster under its old server id", func() error {
		if err := oneCluster(t, tls, addrs, "OVN_Northbound"); err != nil {
			return err
		}
		now, err := stateOf(t, tls, addrs[0], "OVN_Northbound")
		if err != nil {
			return err
		}
		if now.CID != before.CID || now.SID != before.SID {
			return errorf("member 0 is server %s of cluster %s, was %s of %s", now.SID, now.CID, before.SID, before.CID)
		}
		return nil
	})
	// Read from member 0 alone: it has the data from before and during.
	only0 := append([]string{"--db=" + addrs[0], "--timeout=30", "--no-leader-only"}, tls...)
	ovntest.Eventually(t, time.Minute, "member 0 serves the switches", func() error {
		out, err := ovntest.OVS(t, "ovn-nbctl", append(only0, "ls-list")...)
		if err != nil {
			return err
		}
		for _, sw := range []string{"sw-before", "sw-during"} {
			if !strings.Contains(out, "("+sw+")") {
				return errorf("member 0 lists no %s: %q", sw, out)
			}
		}
		return nil
	})
}

// Deleting a central takes every child with it: the StatefulSets with
// their member claims, the Services, the PDBs, northd, the scripts, the
// backup CronJob and claim, the NetworkPolicy, the Certificates and
// Issuers of its own CA, the certificate Secrets, the CA's private key
// among them, and the pods, whose ovsdb-servers stop answering; nothing
// named after the central is left. Before, each certificate Secret is
// tied to its Certificate, a pass over tied Secrets writes nothing, and
// the relay's and the own CA's Secrets go when the central turns them off.
func TestIntegrationCentralDeletion(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	ctx := context.Background()
	c := newCentral(t, "ocgone", 1, 31781, 31791)
	c = waitReady(t, c.Name, 6*time.Minute)

	before := leftovers(t, c.Name)
	for _, want := range []string{
		"StatefulSet/ocgone-nb", "StatefulSet/ocgone-sb", "Service/ocgone-nb", "Service/ocgone-sb-0",
		"PodDisruptionBudget/ocgone-nb", "Deployment/ocgone-northd", "ConfigMap/ocgone-central-scripts",
		"CronJob/ocgone-backup", "PersistentVolumeClaim/ocgone-backup", "PersistentVolumeClaim/db-ocgone-nb-0",
		"PersistentVolumeClaim/db-ocgone-sb-0", "NetworkPolicy/ocgone-sb", "Certificate/ocgone-client",
		"Certificate/ocgone-ca", "Issuer/ocgone-ca", "Issuer/ocgone-selfsigned", "Pod/ocgone-nb-0",
		"Secret/ocgone-ca", "Secret/ocgone-nb-server", "Secret/ocgone-sb-server", "Secret/ocgone-client",
	} {
		if !before[want] {
			t.Errorf("the settled central has no %s (it has %v)", want, keys(before))
		}
	}
	checkSecretsTiedAndSettled(t, c)
	c = checkRetiredSecretsGo(t, c)

	// The identity and the members' addresses on the named issuer, which
	// the members may take a moment to load.
	tls := clientTLS(t, c.Status.ClientSecretName)
	var members []string
	for _, db := range []struct{ short, port string }{{"nb", "6641"}, {"sb", "6642"}} {
		p := &corev1.Pod{}
		if err := e.Management.Client.Get(ctx, workloadKey(c.Name+"-"+db.short+"-0"), p); err != nil {
			t.Fatal(err)
		}
		members = append(members, "ssl:"+p.Status.PodIP+":"+db.port)
	}
	for _, a := range members {
		ovntest.Eventually(t, 2*time.Minute, "member "+a+" answers before the deletion", func() error {
			_, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, tls...), "--timeout=20", "list-dbs", a)...)
			return err
		})
	}

	if err := e.Management.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	ovntest.Eventually(t, time.Minute, "the central is gone", func() error {
		err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(c), &ovnv1alpha1.OVNCentral{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errorf("central still there: %v", err)
	})
	ovntest.Eventually(t, 3*time.Minute, "every child of the central is gone", func() error {
		if left := leftovers(t, c.Name); len(left) > 0 {
			return errorf("left behind: %v", keys(left))
		}
		return nil
	})
	for _, a := range members {
		ovntest.Eventually(t, time.Minute, "member "+a+" stops answering", func() error {
			if _, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, tls...), "--timeout=5", "list-dbs", a)...); err == nil {
				return errorf("%s still answers", a)
			}
			return nil
		})
	}
}

// leftovers lists what in the workload namespace is named after the
// central, by kind/name.
func leftovers(t *testing.T, central string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	lists := map[string]client.ObjectList{
		"StatefulSet": &appsv1.StatefulSetList{}, "Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{},
		"ConfigMap": &corev1.ConfigMapList{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{},
		"Pod": &corev1.PodList{}, "CronJob": &batchv1.CronJobList{}, "Job": &batchv1.JobList{},
		"PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{}, "NetworkPolicy": &networkingv1.NetworkPolicyList{},
		"Certificate": &cmv1.CertificateList{}, "Issuer": &cmv1.IssuerList{}, "Secret": &corev1.SecretList{},
	}
	out := map[string]bool{}
	for kind, list := range lists {
		if err := env.Management.Client.List(ctx, list, client.InNamespace(testenv.WorkloadNamespace)); err != nil {
			t.Fatalf("listing %ss: %v", kind, err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			o, ok := item.(client.Object)
			if !ok {
				continue
			}
			if n := o.GetName(); strings.HasPrefix(n, central+"-") || strings.HasPrefix(n, "db-"+central+"-") {
				out[kind+"/"+n] = true
			}
		}
	}
	return out
}

// keys are a set's members.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
