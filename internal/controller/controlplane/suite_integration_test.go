package controlplane_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
	"github.com/anvil/anvil/internal/targetcluster"
)

var (
	env      *testenv.Environment
	cloud    *openstacktest.Cloud
	registry *targetcluster.Registry
	logs     = &testenv.LogBuffer{}
	started  sync.Once
)

// Four compute clusters, so that the benchmark can measure 1, 2 and 4, and
// the real Keystone, in which the ControlPlane manages accounts. The
// reference Nova comes too, for its catalog entry: it holds RegionOne's
// compute catalog before any ControlPlane of this suite looks, so none of
// them registers its in-cluster API there, where the other packages' clients
// would find an address they cannot reach.
func TestMain(m *testing.M) {
	os.Exit(openstacktest.RunWithNova(&cloud, func() int {
		return testenv.Run(m, testenv.Options{ComputeClusters: 4, Audit: true}, &env)
	}))
}

// startOperator runs the registry, every controller and the webhooks,
// wired as production wires them, once per package.
func startOperator(tb testing.TB) *testenv.Environment {
	tb.Helper()
	e := testenv.Require(tb, env)
	started.Do(func() {
		mgr, err := e.NewManager(logs)
		if err != nil {
			tb.Fatal(err)
		}
		// The Nova of every ControlPlane runs its control plane here: kwok
		// runs its pods and completes its database Jobs on one node.
		if err := e.Management.StartWorkloads(context.Background(), testenv.Node{Name: "mgmt-node"}); err != nil {
			tb.Fatal(err)
		}
		registry, err = operator.Setup(context.Background(), mgr, &operator.Options{
			ClustersNamespace: e.ClustersNamespace, EnableWebhooks: true, ClusterProbeInterval: time.Second,
			AllowedKeystoneHosts: suiteKeystoneHosts(tb),
			// testenv registers its compute clusters without a namespaces key.
			AllowClusterWideRegistrations: true,
		})
		if err != nil {
			tb.Fatal(err)
		}
		err = testenv.StartManager(mgr, func() bool {
			for _, c := range e.Compute {
				if _, err := registry.Resolve(c.Name); err != nil {
					return false
				}
			}
			return true
		})
		if err != nil {
			tb.Fatal(err)
		}
	})
	return e
}

// Test credentials, searched for in the log and the events.
const (
	busURL        = "rabbit://nova:bus-PASSWORD-a1@rabbit.openstack.svc:5671/nova"
	remoteBusURL  = "rabbit://nova:remote-PASSWORD-b2@rabbit.example.com:5671/nova"
	servicePass   = "service-PASSWORD-c3"
	rotatedPass   = "service-PASSWORD-rotated-d4"
	caBundle      = "-----BEGIN CERTIFICATE-----\nMIIBcp\n-----END CERTIFICATE-----\n"
	dbPass        = "db-PASSWORD-e5"
	testNamespace = testenv.WorkloadNamespace
)

var credentials = []string{busURL, remoteBusURL, servicePass, rotatedPass, dbPass, "bus-PASSWORD-a1", "remote-PASSWORD-b2"}

// newControlPlane creates the inputs and a ControlPlane named name with a
// TLS bus, the referenced services and, when remote, the hand-over.
func newControlPlane(tb testing.TB, name string, remote bool) *c5c3v1alpha1.ControlPlane {
	tb.Helper()
	cp := buildControlPlane(tb, name, remote)
	if err := env.Management.Client.Create(context.Background(), cp); err != nil {
		tb.Fatalf("creating ControlPlane %s: %v", name, err)
	}
	return cp
}

// buildControlPlane creates newControlPlane's inputs and returns the
// ControlPlane without creating it.
func buildControlPlane(tb testing.TB, name string, remote bool) *c5c3v1alpha1.ControlPlane {
	tb.Helper()
	putSecret(tb, name+"-bus", map[string]string{"transport_url": busURL})
	putSecret(tb, name+"-bus-ca", map[string]string{"ca.crt": caBundle})
	putSecret(tb, name+"-nova-password", map[string]string{"password": servicePass})
	putSecret(tb, name+"-remote-transport", map[string]string{"transport_url": remoteBusURL})
	putSecret(tb, name+"-db", map[string]string{"username": "nova", "password": dbPass})
	svc := func(host string) *c5c3v1alpha1.ReferencedService {
		return &c5c3v1alpha1.ReferencedService{InternalEndpoint: "http://" + host + ".openstack.svc", PublicEndpoint: "https://" + host + ".example.com"}
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{
		SecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus"},
		TLS:       &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus-ca"}},
	}
	cp.Spec.Services = c5c3v1alpha1.ServicesSpec{
		Keystone:  &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://" + closedKeystone(tb) + "/v3", PublicEndpoint: "https://keystone.example.com/v3", Region: "RegionOne"},
		Placement: svc("placement"), Neutron: &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: *svc("neutron")}, Glance: svc("glance"),
		Nova: &c5c3v1alpha1.NovaServiceSpec{
			OpenStackRelease:     "2026.1",
			Image:                anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
			ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-nova-password"},
			// kwok simulates the Nova's pods, so nothing opens these.
			APIDatabase: &c5c3v1alpha1.DatabaseSpec{Host: "mariadb.openstack.svc", Database: "nova_api", SecretName: name + "-db"},
			Database:    &c5c3v1alpha1.DatabaseSpec{Host: "mariadb.openstack.svc", Database: "nova", SecretName: name + "-db"},
		},
	}
	if remote {
		cp.Spec.Services.Nova.RemoteCompute = &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-remote-transport"}}
	}
	return cp
}

// closedKeystone is the suite's Keystone address: the suite's pools dial
// their Nova's Keystone, and must never reach a real one (other packages'
// tests own the cloud's aggregates), nor send a name to a resolver off
// this machine.
func closedKeystone(tb testing.TB) string {
	tb.Helper()
	return testenv.ClosedAddress(tb)
}

// newPool creates a NovaCompute of cp's Nova on a compute cluster. The
// pool controller runs too, but no node carries the pool's label, so the
// pool holds no node and its teardown is quick.
func newPool(tb testing.TB, cp, name, cluster string) *novav1alpha1.NovaCompute {
	tb.Helper()
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	p.Spec.NovaRef.Name = cp + "-nova"
	p.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/nova-compute-pool": name}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	if err := env.Management.Client.Create(context.Background(), p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// waitNovaReady waits until the ControlPlane's NovaReady has the reason.
func waitNovaReady(tb testing.TB, name, reason string) *metav1.Condition {
	tb.Helper()
	var got *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		got = apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.NovaReadyCondition)
		return got != nil && got.Reason == reason, nil
	})
	if err != nil {
		tb.Fatalf("%s: NovaReady never reached %s (last %+v)", name, reason, got)
	}
	return got
}

func remoteSecret(tb testing.TB, cluster, name string) (*corev1.Secret, error) {
	tb.Helper()
	s := &corev1.Secret{}
	err := env.ComputeCluster(cluster).Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, s)
	return s, err
}

func localSecret(tb testing.TB, name string) *corev1.Secret {
	tb.Helper()
	s := &corev1.Secret{}
	if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func putSecret(tb testing.TB, name string, data map[string]string) {
	tb.Helper()
	env.Management.PutSecret(tb, testNamespace, name, data)
}

// assertNoLeak fails when a test credential appears in the log, an event or
// a condition.
func assertNoLeak(t *testing.T) {
	t.Helper()
	texts := append([]string{logs.String()}, env.Management.EventMessages(t)...)
	cps := &c5c3v1alpha1.ControlPlaneList{}
	if err := env.Management.Client.List(context.Background(), cps); err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps.Items {
		texts = append(texts, testenv.ConditionMessages(cp.Status.Conditions)...)
	}
	testenv.AssertNoLeak(t, texts, credentials)
}

// suiteKeystoneHosts is the operator's --allowed-keystone-hosts here: the
// closed stand-in Keystone and the made-up public one every ControlPlane
// of the suite declares, and the service set's Keystone, which the
// account and catalog tests use.
func suiteKeystoneHosts(tb testing.TB) []string {
	tb.Helper()
	// keystone-gw.example.com is the gateway hostname of the ControlPlane
	// round trips; the suite's Novas run under kwok, so nothing dials it.
	hosts := []string{"http://" + closedKeystone(tb), "keystone.example.com", "keystone-gw.example.com"}
	if cloud == nil {
		return hosts
	}
	return append(hosts, cloud.KeystoneHosts(tb)...)
}
