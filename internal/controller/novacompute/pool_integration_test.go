package novacompute_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/controller/workload"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
	hypervisorv1 "github.com/anvil/anvil/internal/hypervisor/v1"
	"github.com/anvil/anvil/internal/openstack"
)

const (
	ns       = testenv.WorkloadNamespace
	cpName   = "poolcp"
	novaName = cpName + "-nova"
	poolKey  = "openstack.c5c3.io/nova-compute-pool"
	marker   = ns + "/" + novaName
)

// secrets are the credential values of this suite, searched for in logs,
// events and conditions.
var secrets []string

// TestIntegrationPool takes pools through their life on compute-a against
// the real Nova: the subtests share the pools and run in order.
func TestIntegrationPool(t *testing.T) {
	e := startStack(t)
	compute := e.ComputeCluster("compute-a")
	_, nova := cloud.ForTest(t)
	// The audit logs from here on hold the operator's writes while the
	// suite converges, which testSettledWritesNothing checks it can tell.
	setupMarks := auditMarks(t, []*testenv.Cluster{e.Management, compute})
	newControlPlane(t, e)

	t.Run("a pool goes Ready", func(t *testing.T) { testPoolReady(t, e, compute, nova) })
	t.Run("failed builds reach status, the gauge and an event", func(t *testing.T) { testFailedBuilds(t, e) })
	t.Run("a second pool on the same nodes gets Conflict", func(t *testing.T) { testConflict(t, e, compute) })
	t.Run("a same-named node on another cluster gets Conflict", func(t *testing.T) { testCrossClusterConflict(t, e, nova) })
	t.Run("a pool adopts only its own services; a brownfield one is left alone", func(t *testing.T) { testAdoption(t, e, nova) })
	t.Run("traits reach Placement and the Hypervisors", func(t *testing.T) { testTraits(t, e, compute, nova) })
	t.Run("a settled operator writes nothing", func(t *testing.T) { testSettledWritesNothing(t, e, compute, setupMarks) })
	t.Run("a pool whose cluster cannot use the bus starts no DaemonSet", func(t *testing.T) { testPreflight(t, e, compute) })
	t.Run("rotation rolls RollingUpdate once and leaves OnDelete", func(t *testing.T) { testRotation(t, e, compute) })
	t.Run("a leaving node drains and is released", func(t *testing.T) { testDrain(t, e, compute, nova) })
	t.Run("deleting the last pool reaps and sweeps", func(t *testing.T) { testDeleteLast(t, e, compute, nova) })

	testenv.AssertNoLeak(t, append(append(e.Management.EventMessages(t), logs.String()), poolConditionTexts(t, e)...), secrets)
}

// newControlPlane declares the cloud the pools join, and notes the
// credentials the leak scan searches for.
func newControlPlane(t *testing.T, e *testenv.Environment) {
	t.Helper()
	creds := createControlPlane(t, e, cpName, "metadata-"+run+"-first")
	secrets = append(creds, "metadata-"+run+"-second")
}

// createControlPlane declares a ControlPlane named name that points at the
// local services: the TLS bus, the https Keystone, the databases, and the
// remote hand-over, so compute-a receives the remote contract. It returns
// the credentials it wrote into the input Secrets.
func createControlPlane(t *testing.T, e *testenv.Environment, name, metadataSecret string) []string {
	t.Helper()
	// Its pools reach the set's Nova, whose tenant_filter_tests one Nova
	// at a time may hold; see ReserveTenantFilterTests. The hold is taken
	// once the ControlPlane is declared, so its Nova comes up meanwhile.
	take := cloud.ReserveTenantFilterTests(t)
	local := cloud.Local()
	busURL, err := local.TransportURL(true)
	if err != nil {
		t.Fatal(err)
	}
	novaPassword, err := local.ServicePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	dbPassword, err := local.DatabasePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := readFile(local.Endpoints[localcloud.RabbitMQCA])
	if err != nil {
		t.Fatal(err)
	}
	m := e.Management
	m.PutSecret(t, ns, name+"-bus", map[string]string{"transport_url": busURL})
	m.PutSecret(t, ns, name+"-bus-ca", map[string]string{"ca.crt": ca})
	m.PutSecret(t, ns, name+"-nova-password", map[string]string{"password": novaPassword})
	m.PutSecret(t, ns, name+"-remote-transport", map[string]string{"transport_url": busURL})
	m.PutSecret(t, ns, name+"-metadata", map[string]string{"shared_secret": metadataSecret})
	m.PutSecret(t, ns, name+"-db", map[string]string{"username": "nova", "password": dbPassword})
	ep := local.Endpoints
	svc := func(url string) *c5c3v1alpha1.ReferencedService {
		return &c5c3v1alpha1.ReferencedService{InternalEndpoint: url, PublicEndpoint: url}
	}
	port := int32(13306)
	if _, err := fmt.Sscanf(ep[localcloud.MariaDBPort], "%d", &port); err != nil {
		t.Fatalf("the MariaDB port in endpoints.env: %v", err)
	}
	db := func(schema string) *c5c3v1alpha1.DatabaseSpec {
		return &c5c3v1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: port, Database: schema, SecretName: name + "-db"}
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{
		SecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus"},
		TLS:       &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus-ca"}},
	}
	cp.Spec.Services = c5c3v1alpha1.ServicesSpec{
		Keystone:  &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: ep[localcloud.KeystoneURL], PublicEndpoint: ep[localcloud.KeystonePublicURL], Region: ep[localcloud.Region]},
		Placement: svc(ep[localcloud.PlacementURL]), Neutron: &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: *svc(ep[localcloud.NeutronURL])}, Glance: svc(ep[localcloud.ImageURL]),
		Nova: &c5c3v1alpha1.NovaServiceSpec{
			OpenStackRelease:        "2026.1",
			Image:                   anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
			ServiceUserSecretRef:    c5c3v1alpha1.SecretKeyRef{Name: name + "-nova-password"},
			MetadataSharedSecretRef: &c5c3v1alpha1.SecretKeyRef{Name: name + "-metadata", Key: "shared_secret"},
			RemoteCompute:           &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-remote-transport"}},
			APIDatabase:             db("nova_api"),
			Database:                db("nova"),
		},
	}
	if err := m.Client.Create(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
	take()
	return []string{busURL, novaPassword, dbPassword, metadataSecret}
}

// newPool creates a pool of the suite's Nova on compute-a.
func newPool(t *testing.T, e *testenv.Environment, name, selector string, mut func(*novav1alpha1.NovaCompute)) {
	t.Helper()
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	p.Spec.NovaRef.Name = novaName
	p.Spec.NodeSelector = map[string]string{poolKey: selector}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	p.Spec.Libvirt.VirtType = "kvm"
	if mut != nil {
		mut(p)
	}
	if err := e.Management.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

func getPool(ctx context.Context, e *testenv.Environment, name string) (*novav1alpha1.NovaCompute, error) {
	p := &novav1alpha1.NovaCompute{}
	err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
	return p, err
}

// conditionOf renders a condition for failure messages.
func conditionOf(p *novav1alpha1.NovaCompute, typ string) (*metav1.Condition, string) {
	c := apimeta.FindStatusCondition(p.Status.Conditions, typ)
	if c == nil {
		return nil, typ + " absent"
	}
	return c, fmt.Sprintf("%s=%s %s: %s", typ, c.Status, c.Reason, c.Message)
}

func nodeEntry(p *novav1alpha1.NovaCompute, name string) *novav1alpha1.NovaComputeNode {
	for i := range p.Status.Nodes {
		if p.Status.Nodes[i].Name == name {
			return &p.Status.Nodes[i]
		}
	}
	return nil
}

func testPoolReady(t *testing.T, e *testenv.Environment, compute *testenv.Cluster, nova *openstack.Session) {
	// Another package's discover_hosts would map these hosts too; hold it
	// off, so the pool's own Job is what maps them.
	defer cloud.HoldDiscovery(t)()
	labelNode(t, compute, nodeA1, "a")
	labelNode(t, compute, nodeA2, "a")
	newPool(t, e, "pool-a", "a", nil)
	eventually(t, 6*time.Minute, "pool-a Ready", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-a")
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, anvilmeta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue, seen + "; pods: " + podStates(t, compute, "pool-a")
	})
	p, _ := getPool(t.Context(), e, "pool-a")
	for _, n := range []struct{ name, zone string }{{nodeA1, zone1}, {nodeA2, zone2}} {
		en := nodeEntry(p, n.name)
		if en == nil || en.Phase != novav1alpha1.NodeActive || en.Zone != n.zone || en.ServiceState != "up" || en.ServiceStatus != "enabled" {
			t.Errorf("node %s = %+v, want Active in %s with an enabled, up service", n.name, en, n.zone)
		}
	}
	if c, seen := conditionOf(p, novav1alpha1.AggregatesReadyCondition); c == nil || c.Reason != novav1alpha1.NodesOutsideZoneAggregateReason {
		t.Errorf("without the hypervisor operator: %s", seen)
	}
	if p.Status.InstalledImage != "ghcr.io/c5c3/nova-compute:2026.1" || p.Status.DesiredNumberScheduled != 2 || p.Status.NumberReady != 2 {
		t.Errorf("status image %q, desired %d, ready %d", p.Status.InstalledImage, p.Status.DesiredNumberScheduled, p.Status.NumberReady)
	}
	// The hosts are mapped: the API lists their hypervisors.
	hvs, err := nova.ListHypervisors(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{nodeA1, nodeA2} {
		if !slices.ContainsFunc(hvs, func(h openstack.Hypervisor) bool { return h.Hostname == n }) {
			t.Errorf("hypervisor %s is not listed, so its host is not mapped", n)
		}
	}
	aggs := aggregatesByName(t, nova)
	for name, az := range map[string]string{zone1: zone1, zone2: zone2, novav1alpha1.TenantFilterTestsAggregate: ""} {
		a, ok := aggs[name]
		if !ok || a.Zone != az || a.Metadata[novav1alpha1.AggregateMarkerKey] != marker {
			t.Errorf("aggregate %s = %+v (exists %v), want zone %q and marker %s", name, a, ok, az, marker)
		}
	}
	if !hasEvent(t, e, "pool-a", novav1alpha1.HostDiscoveryStartedEvent) {
		t.Error("no HostDiscoveryStarted event")
	}
	if n := histogramCount(t, "anvil_novacompute_node_onboarding_seconds", "mapped"); n < 2 {
		t.Errorf("onboarding histogram (mapped) counted %d nodes, want 2", n)
	}
	if n := gaugeValue(t, "anvil_novacompute_nodes", map[string]string{"pool": "pool-a", "phase": novav1alpha1.NodeActive}); n != 2 {
		t.Errorf("the node gauge reads %v Active nodes of pool-a, want 2", n)
	}
	testSchedulable(t, nova, aggs[zone1])
}

// testSchedulable plays the hypervisor operator for nodeA1: it puts the
// host into its zone aggregate, which Nova mirrors into Placement, and
// waits for the pool to observe the node's time to schedulable. It takes
// the host out again, so the later subtests find the aggregates as the
// pool left them.
func testSchedulable(t *testing.T, nova *openstack.Session, agg openstack.Aggregate) {
	const metric = "anvil_novacompute_node_time_to_schedulable_seconds"
	if n := poolHistogramCount(t, metric, "pool-a"); n != 0 {
		t.Errorf("%s counted %d node(s) of pool-a before any was in its zone aggregate", metric, n)
	}
	if err := nova.AddAggregateHost(t.Context(), agg.ID, nodeA1); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := nova.RemoveAggregateHost(context.Background(), agg.ID, nodeA1); err != nil {
			t.Errorf("taking %s out of aggregate %s: %v", nodeA1, agg.Name, err)
		}
	}()
	eventually(t, 2*time.Minute, "the pool observes "+nodeA1+" schedulable", func(context.Context) (bool, string) {
		n := poolHistogramCount(t, metric, "pool-a")
		return n == 1, fmt.Sprintf("%s counted %d node(s) of pool-a", metric, n)
	})
	// Settled: later passes ask nothing more and observe nothing again.
	before := placementRequests(t)
	time.Sleep(2 * poolResync)
	if n := poolHistogramCount(t, metric, "pool-a"); n != 1 {
		t.Errorf("%s counted %d node(s) of pool-a after more passes, want still 1", metric, n)
	}
	if d := placementRequests(t) - before; d != 0 {
		t.Errorf("the pools sent %v Placement request(s) while settled, want none", d)
	}
}

// poolHistogramCount returns how many observations a histogram holds for
// a pool, and fails when a series carries a label beyond namespace and
// pool.
func poolHistogramCount(t *testing.T, name, pool string) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 2 || labels["namespace"] == "" {
				t.Errorf("%s has a series labelled %v, want namespace and pool only", name, labels)
			}
			if labels["pool"] == pool {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// placementRequests sums the operator's Placement requests so far.
func placementRequests(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "anvil_openstack_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" && l.GetValue() == "placement" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

func testConflict(t *testing.T, e *testenv.Environment, compute *testenv.Cluster) {
	newPool(t, e, "pool-b", "a", nil)
	eventually(t, time.Minute, "pool-b in Conflict", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-b")
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, novav1alpha1.NodesReadyCondition)
		en := nodeEntry(p, nodeA1)
		return c != nil && c.Reason == novav1alpha1.NodeConflictReason && en != nil && en.Phase == novav1alpha1.NodeConflict && en.ConflictsWith == "pool-a", seen
	})
	pods := &corev1.PodList{}
	if err := compute.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels(novacompute.PodLabels("pool-b"))); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == nodeA1 || pod.Spec.NodeName == nodeA2 {
			t.Errorf("pool-b runs pod %s on %s", pod.Name, pod.Spec.NodeName)
		}
	}
	if !hasEvent(t, e, "pool-b", novav1alpha1.NodeConflictEvent) {
		t.Error("no NodeConflict event")
	}
	deletePool(t, e, "pool-b")
}

// A node on compute-b named like compute-a's nodeA1, which pool-a runs:
// the name is one Nova host in the whole cloud, so the pool on compute-b
// must report a Conflict and never touch compute-a's service, not even
// when it is deleted.
func testCrossClusterConflict(t *testing.T, e *testenv.Environment, nova *openstack.Session) {
	other := e.ComputeCluster("compute-b")
	twin := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeA1, Labels: map[string]string{poolKey: "twin"}}}
	if err := other.Client.Create(t.Context(), twin); err != nil {
		t.Fatal(err)
	}
	newPool(t, e, "pool-twin", "twin", func(p *novav1alpha1.NovaCompute) {
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-b"}
	})
	eventually(t, time.Minute, "pool-twin in Conflict with pool-a", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-twin")
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, novav1alpha1.NodesReadyCondition)
		en := nodeEntry(p, nodeA1)
		return c != nil && c.Reason == novav1alpha1.NodeConflictReason && en != nil && en.Phase == novav1alpha1.NodeConflict && en.ConflictsWith == "pool-a", seen
	})
	if !hasEventWithMessage(t, e, "pool-twin", novav1alpha1.NodeConflictEvent, "cluster compute-a") {
		t.Error("no NodeConflict event naming compute-a")
	}
	deletePool(t, e, "pool-twin")
	svcs, err := nova.ListComputeServices(t.Context(), nodeA1)
	if err != nil || len(svcs) != 1 || svcs[0].Status != "enabled" {
		t.Errorf("compute-a's service of %s after the twin pool came and went = %+v, %v; want one, enabled", nodeA1, svcs, err)
	}
	if p, err := getPool(t.Context(), e, "pool-a"); err != nil || nodeEntry(p, nodeA1) == nil || nodeEntry(p, nodeA1).Phase != novav1alpha1.NodeActive {
		t.Errorf("pool-a lost %s: %v", nodeA1, err)
	}
}

func testTraits(t *testing.T, e *testenv.Environment, compute *testenv.Cluster, nova *openstack.Session) {
	cl, _ := cloud.ForTest(t)
	poolTrait, hostTrait := "CUSTOM_POOL_A_"+run, "CUSTOM_GPU_"+run
	// The cleanup takes the traits off every provider and deletes them.
	cl.Trait(poolTrait)
	cl.Trait(hostTrait)
	for _, n := range []string{nodeA1, nodeA2} {
		hv := &hypervisorv1.Hypervisor{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := compute.Client.Create(t.Context(), hv); err != nil {
			t.Fatal(err)
		}
	}
	patchPool(t, e, "pool-a", func(p *novav1alpha1.NovaCompute) {
		p.Spec.Traits = []string{poolTrait}
		p.Spec.HostTraits = []novav1alpha1.HostTraitsSpec{{NodeName: nodeA1, Traits: []string{hostTrait}}}
	})
	want := map[string][]string{nodeA1: sorted(hostTrait, poolTrait), nodeA2: {poolTrait}}
	waitTraitsReason(t, e, novav1alpha1.WaitingForHypervisorOperatorReason)
	for node, traits := range want {
		hv := &hypervisorv1.Hypervisor{}
		if err := compute.Client.Get(t.Context(), client.ObjectKey{Name: node}, hv); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(hv.Spec.CustomTraits, traits) {
			t.Errorf("Hypervisor %s customTraits = %v, want %v", node, hv.Spec.CustomTraits, traits)
		}
	}
	names, err := nova.ListTraits(t.Context(), "CUSTOM_")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{poolTrait, hostTrait} {
		if !slices.Contains(names, tr) {
			t.Errorf("trait %s is not in Placement", tr)
		}
	}
	// The hypervisor operator applies the lists and reports them.
	for node, traits := range want {
		hv := &hypervisorv1.Hypervisor{}
		if err := compute.Client.Get(t.Context(), client.ObjectKey{Name: node}, hv); err != nil {
			t.Fatal(err)
		}
		hv.Status.Traits = traits
		if err := compute.Client.Status().Update(t.Context(), hv); err != nil {
			t.Fatal(err)
		}
	}
	// A Hypervisor change is not watched; a pool spec change is.
	patchPool(t, e, "pool-a", func(p *novav1alpha1.NovaCompute) { p.Spec.Traits = []string{poolTrait} })
	waitTraitsReason(t, e, novav1alpha1.TraitsAppliedReason)
}

func testRotation(t *testing.T, e *testenv.Environment, compute *testenv.Cluster) {
	// testPreflight created pool-c on nodeC.
	waitReady(t, e, "pool-c")
	dsA, dsC := daemonSet(t, compute, "pool-a"), daemonSet(t, compute, "pool-c")
	hashA := dsA.Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation]
	podC := podsOf(t, compute, "pool-c")
	if len(podC) != 1 {
		t.Fatalf("pool-c runs %d pods", len(podC))
	}

	e.Management.PutSecret(t, ns, cpName+"-metadata", map[string]string{"shared_secret": "metadata-" + run + "-second"})
	eventually(t, 2*time.Minute, "pool-a's template hash changes", func(context.Context) (bool, string) {
		ds := daemonSet(t, compute, "pool-a")
		h := ds.Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation]
		return h != hashA, "hash " + h
	})
	// The rollout completes, and the template changed exactly once.
	eventually(t, 3*time.Minute, "pool-a's rollout", func(context.Context) (bool, string) {
		ds := daemonSet(t, compute, "pool-a")
		done, _ := workload.DaemonSetRolledOut(ds)
		return done, fmt.Sprintf("%+v", ds.Status)
	})
	waitReady(t, e, "pool-a")
	after := daemonSet(t, compute, "pool-a")
	if after.Generation != dsA.Generation+1 {
		t.Errorf("pool-a's DaemonSet went from generation %d to %d, want one change", dsA.Generation, after.Generation)
	}
	for _, pod := range podsOf(t, compute, "pool-a") {
		if pod.Annotations[novav1alpha1.ComputeConfigHashAnnotation] != after.Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation] {
			t.Errorf("pod %s still runs the old contract", pod.Name)
		}
	}
	// OnDelete: the template moves, the pod stays, and the pool says so.
	eventually(t, time.Minute, "pool-c waits for its pod to be deleted", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-c")
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, novav1alpha1.DaemonSetReadyCondition)
		return c != nil && c.Reason == novav1alpha1.DaemonSetProgressingReason, seen
	})
	if got := daemonSet(t, compute, "pool-c"); got.Generation != dsC.Generation+1 {
		t.Errorf("pool-c's DaemonSet went from generation %d to %d", dsC.Generation, got.Generation)
	}
	if pods := podsOf(t, compute, "pool-c"); len(pods) != 1 || pods[0].UID != podC[0].UID {
		t.Error("the OnDelete pool's pod was replaced")
	}
	deletePool(t, e, "pool-c")
}

func testDrain(t *testing.T, e *testenv.Environment, compute *testenv.Cluster, nova *openstack.Session) {
	server := cloud.BootServer(t, "drain-"+run, nodeA1)
	labelNode(t, compute, nodeA1, "")
	reason := "c5c3.io: leaving NovaCompute openstack/pool-a"
	eventually(t, 2*time.Minute, nodeA1+" draining with one instance", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-a")
		if err != nil {
			return false, err.Error()
		}
		en := nodeEntry(p, nodeA1)
		if en == nil {
			return false, "no entry"
		}
		c, seen := conditionOf(p, novav1alpha1.ServicesReadyCondition)
		return en.Phase == novav1alpha1.NodeDraining && en.Instances != nil && *en.Instances == 1 && en.DisabledReason == reason &&
			c != nil && c.Reason == novav1alpha1.DrainingReason, fmt.Sprintf("%+v; %s", *en, seen)
	})
	svcs, err := nova.ListComputeServices(t.Context(), nodeA1)
	if err != nil || len(svcs) != 1 || svcs[0].Status != "disabled" || svcs[0].DisabledReason != reason {
		t.Fatalf("service of %s = %+v, %v", nodeA1, svcs, err)
	}
	// The node set is part of the template, so the pod on the node is
	// replaced once; a pod keeps running there.
	eventually(t, 2*time.Minute, "a running pod on the draining node", func(context.Context) (bool, string) {
		return slices.ContainsFunc(podsOf(t, compute, "pool-a"), func(p corev1.Pod) bool {
			return p.Spec.NodeName == nodeA1 && p.Status.Phase == corev1.PodRunning
		}), podStates(t, compute, "pool-a")
	})
	if !hasEvent(t, e, "pool-a", novav1alpha1.ComputeServiceDisabledEvent) {
		t.Error("no ComputeServiceDisabled event")
	}

	cloud.DeleteServer(t, server)
	eventually(t, 3*time.Minute, nodeA1+" released", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-a")
		if err != nil {
			return false, err.Error()
		}
		if en := nodeEntry(p, nodeA1); en != nil {
			return false, fmt.Sprintf("%+v", *en)
		}
		return true, ""
	})
	if svcs, err := nova.ListComputeServices(t.Context(), nodeA1); err != nil || len(svcs) != 0 {
		t.Errorf("the service of %s survived: %+v, %v", nodeA1, svcs, err)
	}
	if !hasEvent(t, e, "pool-a", novav1alpha1.ComputeServiceDeletedEvent) {
		t.Error("no ComputeServiceDeleted event")
	}
	eventually(t, time.Minute, "zone aggregate "+zone1+" reaped", func(context.Context) (bool, string) {
		aggs := aggregatesByName(t, nova)
		_, z1 := aggs[zone1]
		_, tft := aggs[novav1alpha1.TenantFilterTestsAggregate]
		return !z1 && tft, fmt.Sprintf("%s exists: %v; %s exists: %v", zone1, z1, novav1alpha1.TenantFilterTestsAggregate, tft)
	})
}

func testDeleteLast(t *testing.T, e *testenv.Environment, compute *testenv.Cluster, nova *openstack.Session) {
	ctx := t.Context()
	// The ControlPlane delivers the hypervisor operator's auth Secret
	// beside the contract; stand in for it, labelled as its delivered copy.
	auth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: novaName + "-hypervisor-operator-auth", Namespace: ns,
		Labels: map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true", childwriter.OwnerKindLabel: "ControlPlane",
			childwriter.OwnerNameLabel: cpName, childwriter.OwnerNamespaceLabel: ns}}, StringData: map[string]string{"username": "hypervisor-operator"}}
	if err := compute.Client.Create(ctx, auth); err != nil {
		t.Fatal(err)
	}
	// A copy made by hand, without the label, in another namespace.
	legacy := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy-" + run}}
	if err := compute.Client.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	copyMade := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: novaName + "-compute-config", Namespace: legacy.Name}, StringData: map[string]string{"cell_name": "cell1"}}
	if err := compute.Client.Create(ctx, copyMade); err != nil {
		t.Fatal(err)
	}

	deletePool(t, e, "pool-a")
	// What the ControlPlane delivered is the ControlPlane's to withdraw:
	// the last pool's teardown leaves it, as it leaves a copy made by hand.
	for _, s := range []*corev1.Secret{auth, copyMade} {
		if err := compute.Client.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}); err != nil {
			t.Errorf("the pool's teardown touched Secret %s/%s: %v", s.Namespace, s.Name, err)
		}
	}
	dsList := &appsv1.DaemonSetList{}
	cmList := &corev1.ConfigMapList{}
	if err := compute.Client.List(ctx, dsList, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := compute.Client.List(ctx, cmList, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "novacompute"}); err != nil {
		t.Fatal(err)
	}
	if len(dsList.Items) != 0 || len(cmList.Items) != 0 {
		t.Errorf("left on compute-a: %d DaemonSets, %d pool ConfigMaps", len(dsList.Items), len(cmList.Items))
	}
	eventually(t, time.Minute, "the last pool's aggregates are reaped", func(context.Context) (bool, string) {
		aggs := aggregatesByName(t, nova)
		_, tft := aggs[novav1alpha1.TenantFilterTestsAggregate]
		_, z2 := aggs[zone2]
		return !tft && !z2, fmt.Sprintf("%s: %v, %s: %v", novav1alpha1.TenantFilterTestsAggregate, tft, zone2, z2)
	})
	if svcs, err := nova.ListComputeServices(ctx, nodeA2); err != nil || len(svcs) != 0 {
		t.Errorf("the service of %s survived the pool: %+v, %v", nodeA2, svcs, err)
	}
}

// deletePool deletes a pool and waits until it is gone.
func deletePool(t *testing.T, e *testenv.Environment, name string) {
	t.Helper()
	p, err := getPool(t.Context(), e, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Management.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, name+" deleted", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v, nodes %+v", p.Finalizers, p.Status.Nodes)
	})
}

func patchPool(t *testing.T, e *testenv.Environment, name string, mut func(*novav1alpha1.NovaCompute)) {
	t.Helper()
	p, err := getPool(t.Context(), e, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	mut(p)
	if err := e.Management.Client.Patch(t.Context(), p, patch); err != nil {
		t.Fatal(err)
	}
}

func waitReady(t *testing.T, e *testenv.Environment, name string) {
	t.Helper()
	eventually(t, 4*time.Minute, name+" Ready", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, name)
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, anvilmeta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation, seen
	})
}

func waitTraitsReason(t *testing.T, e *testenv.Environment, reason string) {
	t.Helper()
	eventually(t, 2*time.Minute, "TraitsReady "+reason, func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-a")
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, novav1alpha1.TraitsReadyCondition)
		return c != nil && c.Reason == reason, seen
	})
}

func daemonSet(t *testing.T, c *testenv.Cluster, pool string) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: novacompute.DaemonSetName(pool)}, ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

func podsOf(t *testing.T, c *testenv.Cluster, pool string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels(novacompute.PodLabels(pool))); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	return live
}

func aggregatesByName(t *testing.T, nova *openstack.Session) map[string]openstack.Aggregate {
	t.Helper()
	all, err := nova.ListAggregates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]openstack.Aggregate{}
	for _, a := range all {
		out[a.Name] = a
	}
	return out
}

func hasEvent(t *testing.T, e *testenv.Environment, pool, reason string) bool {
	return hasEventWithMessage(t, e, pool, reason, "")
}

// hasEventWithMessage waits up to 30 s for an event of the pool with the
// reason whose message contains part.
func hasEventWithMessage(t *testing.T, e *testenv.Environment, pool, reason, part string) bool {
	t.Helper()
	found := false
	deadline := time.Now().Add(30 * time.Second)
	for !found && time.Now().Before(deadline) {
		list := &corev1.EventList{}
		if err := e.Management.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == pool && ev.Reason == reason && strings.Contains(ev.Message, part) {
				found = true
			}
		}
		if !found {
			time.Sleep(250 * time.Millisecond)
		}
	}
	return found
}

// histogramCount returns how many observations the histogram holds for a
// stage, over every pool.
func histogramCount(t *testing.T, name, stage string) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == stage {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

func poolConditionTexts(t *testing.T, e *testenv.Environment) []string {
	list := &novav1alpha1.NovaComputeList{}
	if err := e.Management.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, testenv.ConditionMessages(p.Status.Conditions)...)
	}
	return out
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// podStates summarises the pool's pods for failure messages.
func podStates(t *testing.T, c *testenv.Cluster, pool string) string {
	var out []string
	for _, p := range podsOf(t, c, pool) {
		state := string(p.Status.Phase)
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			switch {
			case cs.State.Waiting != nil:
				state += fmt.Sprintf(" %s:waiting(%s %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			case cs.State.Terminated != nil:
				state += fmt.Sprintf(" %s:exited(%d %s)", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
			case cs.State.Running != nil:
				state += fmt.Sprintf(" %s:running ready=%v", cs.Name, cs.Ready)
			}
		}
		out = append(out, p.Name+" on "+p.Spec.NodeName+": "+state)
	}
	return strings.Join(out, "; ")
}

// gaugeValue returns the value of the gauge series whose labels include
// the given ones, or -1 when there is none.
func gaugeValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if want[l.GetName()] == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
