package novacompute_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/novaconfig"
)

// The system of TestIntegrationDollarPasswordReachesNovaCompute: a Nova and
// a pool of their own on a management node of its own, so that the test
// shares nothing with the other pool tests but the stack.
const (
	dollarNova = "dollar-nova"
	dollarPool = "dollar"
)

var nodeDollar = "hv" + run + "-5"

// dollarSpellings are the ways oslo.config reads a '$' in a value: a
// doubled one, a bare name, a braced group option and a trailing one.
// Unescaped, the second raises and the third becomes the host name.
const dollarSpellings = "Pa$$w0rd$HOST${DEFAULT.host}$"

// TestIntegrationDollarPasswordReachesNovaCompute proves that credentials
// holding '$' reach a real nova-compute intact (issue #16). A Nova publishes
// the contract for a Keystone user and a broker user whose passwords spell
// '$' every way oslo.config expands; a pool on the Nova's own cluster runs
// nova-compute on a node of the pod runner, which hands both to it as OS_
// variables, the way a kubelet does. That nova-compute then reports its
// service up to Nova, over the bus with the broker password, and creates
// its resource provider in Placement, with the Keystone password: each
// happens only if oslo.config read the password as written.
func TestIntegrationDollarPasswordReachesNovaCompute(t *testing.T) {
	// A long suite: a Nova and a pool of their own for one password. Its
	// short version in make test is novaconfig's oslo.config tests, which
	// read the rendered `$` back through the real parser.
	testenv.Long(t, "test-all")
	started := time.Now()
	e := startStack(t)
	m := e.Management
	cl, admin := cloud.ForTest(t)
	local := cloud.Local()
	user := "dollar-" + run
	password := dollarSpellings + randomSuffix(t)
	busPassword := dollarSpellings + randomSuffix(t)
	cl.ServiceUser(user, password)
	busURL := cl.BusUser(local, user, busPassword)
	if !strings.Contains(busURL, "$HOST$%7BDEFAULT.host%7D$") {
		t.Fatal("the transport URL does not carry the broker password's '$' unencoded")
	}
	// Deleted after the pool, which stops its process, and before the user.
	cl.ComputeService(nodeDollar)
	startRunner(t, m, []podrunner.Node{{Name: nodeDollar, Labels: map[string]string{poolKey: dollarPool}}})

	createDollarNova(t, m, user, password, busURL)
	pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: dollarPool, Namespace: ns}}
	pool.Spec.NovaRef.Name = dollarNova
	pool.Spec.NodeSelector = map[string]string{poolKey: dollarPool}
	// A Nova without databases installs no release, so the pool names
	// the image the suite's pools default to.
	pool.Spec.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova-compute", Tag: "2026.1"}
	pool.Spec.Libvirt.VirtType = "kvm"
	if err := m.Client.Create(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	defer tearDownDollar(t, e)

	assertContractEscaped(t, m, password, busURL)
	eventually(t, 5*time.Minute, "nova-compute on "+nodeDollar+" reports its service up over the bus", func(ctx context.Context) (bool, string) {
		svcs, err := admin.ListComputeServices(ctx, nodeDollar)
		if err != nil {
			return false, err.Error()
		}
		return len(svcs) == 1 && svcs[0].State == "up", fmt.Sprintf("services %+v; pods: %s", svcs, podStates(t, m, dollarPool))
	})
	eventually(t, 2*time.Minute, "nova-compute on "+nodeDollar+" creates its resource provider through Keystone", func(ctx context.Context) (bool, string) {
		rps, err := admin.ListResourceProviders(ctx, nodeDollar)
		if err != nil {
			return false, err.Error()
		}
		return len(rps) == 1, fmt.Sprintf("%d providers named %s", len(rps), nodeDollar)
	})
	assertNotRestarted(t, m)
	assertRefusedOptionNeverReachesAPod(t, e, dollarPool)
	testenv.AssertNoLeak(t, append(append(m.EventMessages(t), logs.String()), poolConditionTexts(t, e)...),
		[]string{password, busPassword, doubled(password), doubled(busPassword)})
	t.Logf("nova-compute authenticated with both passwords %s after the test started", time.Since(started).Round(time.Second))
}

// createDollarNova declares the Nova whose contract the pool reads: the
// set's https Keystone and TLS bus, authenticated as user, and no
// databases, so it publishes the contract and runs no control plane.
func createDollarNova(t *testing.T, m *testenv.Cluster, user, password, busURL string) {
	t.Helper()
	// Its pool reaches the set's Nova; see ReserveTenantFilterTests.
	take := cloud.ReserveTenantFilterTests(t)
	ca, err := readFile(cloud.Local().Endpoints[localcloud.RabbitMQCA])
	if err != nil {
		t.Fatal(err)
	}
	m.PutSecret(t, ns, dollarNova+"-password", map[string]string{"password": password})
	m.PutSecret(t, ns, dollarNova+"-bus", map[string]string{"transport_url": busURL})
	m.PutSecret(t, ns, dollarNova+"-bus-ca", map[string]string{"ca.crt": ca})
	m.PutSecret(t, ns, dollarNova+"-metadata", map[string]string{"shared_secret": "dollar-metadata-" + run})
	ep := cloud.Endpoints
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: dollarNova, Namespace: ns}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.KeystoneEndpoint = ep[localcloud.KeystoneURL]
	n.Spec.KeystonePublicEndpoint = ep[localcloud.KeystonePublicURL]
	n.Spec.Region = ep[localcloud.Region]
	n.Spec.ServiceUser = novav1alpha1.ServiceUserSpec{
		Username: user, ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default",
		SecretRef: novav1alpha1.PasswordSecretRef{Name: dollarNova + "-password", Key: "password"},
	}
	n.Spec.Messaging.SecretRef = novav1alpha1.TransportURLSecretRef{Name: dollarNova + "-bus", Key: "transport_url"}
	n.Spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{CABundleSecretRef: novav1alpha1.CABundleSecretRef{Name: dollarNova + "-bus-ca", Key: "ca.crt"}}
	n.Spec.Metadata.SharedSecretRef = novav1alpha1.SharedSecretRef{Name: dollarNova + "-metadata", Key: "shared_secret"}
	n.Spec.Endpoints.Placement.Override = ep[localcloud.PlacementURL]
	n.Spec.Endpoints.Neutron.Override = ep[localcloud.NeutronURL]
	n.Spec.Endpoints.Glance.Override = ep[localcloud.ImageURL]
	if err := m.Client.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	take()
}

// assertContractEscaped checks, without printing either, that the contract
// the pool mounts holds both credentials spelled for oslo.config: what the
// pod runner then hands nova-compute is what a kubelet would.
func assertContractEscaped(t *testing.T, m *testenv.Cluster, password, busURL string) {
	t.Helper()
	eventually(t, time.Minute, "the Nova publishes its contract", func(ctx context.Context) (bool, string) {
		s := &corev1.Secret{}
		err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: dollarNova + novav1alpha1.ComputeConfigSuffix}, s)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	s := &corev1.Secret{}
	if err := m.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: dollarNova + novav1alpha1.ComputeConfigSuffix}, s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data[novaconfig.KeyPassword]) != doubled(password) {
		t.Error("the contract's password key is not the password with every '$' doubled")
	}
	if string(s.Data[novaconfig.KeyTransportURL]) != doubled(busURL) {
		t.Error("the contract's transport_url key is not the URL with every '$' doubled")
	}
}

// assertNotRestarted checks that nova-compute came up once: a crash loop
// that recovered would mean a first read went wrong.
func assertNotRestarted(t *testing.T, m *testenv.Cluster) {
	t.Helper()
	for _, p := range podsOf(t, m, dollarPool) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("container %s of %s restarted %d times", cs.Name, p.Name, cs.RestartCount)
			}
		}
	}
}

// tearDownDollar deletes the pool, which stops nova-compute, and the Nova
// with its input Secrets; the Cleanup then deletes the service, the broker
// user and the Keystone user.
func tearDownDollar(t *testing.T, e *testenv.Environment) {
	t.Helper()
	if _, err := getPool(t.Context(), e, dollarPool); err == nil {
		deletePool(t, e, dollarPool)
	}
	m := e.Management
	eventually(t, 2*time.Minute, "the pool's pods gone", func(context.Context) (bool, string) {
		pods := podsOf(t, m, dollarPool)
		return len(pods) == 0, podStates(t, m, dollarPool)
	})
	objs := []client.Object{&novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: dollarNova, Namespace: ns}}}
	for _, suffix := range []string{"-password", "-bus", "-bus-ca", "-metadata"} {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: dollarNova + suffix, Namespace: ns}})
	}
	for _, o := range objs {
		if err := m.Client.Delete(t.Context(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", o.GetName(), err)
		}
	}
}

// doubled is s as oslo.config must be given it, spelled out here rather
// than taken from the code under test.
func doubled(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// randomSuffix makes a password of this run unguessable, so that the leak
// scan cannot match anything but the password itself.
func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
