package controlplane_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/regions"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/controlplane"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/openstack"
)

// TestIntegrationCatalog registers Nova's API in the real Keystone, in
// regions of its own: the shared Keystone's RegionOne already has a
// compute service that is not Anvil's. It covers registration, an update in
// place, a second ControlPlane in the region, a foreign region, and a
// deletion that removes only the ControlPlane's own rows.
func TestIntegrationCatalog(t *testing.T) {
	e := startOperator(t)
	openstacktest.Require(t, cloud)
	ctx := context.Background()
	admin, err := openstack.NewIdentitySession(ctx, cloud.AdminCredentials())
	if err != nil {
		t.Fatal(err)
	}
	suffix := randomSuffix(t)
	region, foreignRegion := "anvil-catalog-"+suffix, "anvil-catalog-"+suffix+"-f"
	createRegion(t, region)
	createRegion(t, foreignRegion)
	foreignID := createForeignCompute(t, admin, foreignRegion)
	// Should the test stop early, this run's registrations go before
	// their regions.
	t.Cleanup(func() { removeMarked(admin, suffix) })
	regionOne := endpointIDsIn(t, admin, "RegionOne")

	// Registration: Anvil's marked service, with both endpoints.
	a := catalogControlPlane(t, "cat-a-"+suffix, region)
	a.Spec.Services.Nova.PublicEndpoint = "https://nova-" + suffix + ".example.com/v2.1"
	if err := e.Management.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	cond := waitCatalog(t, a.Name, c5c3v1alpha1.CatalogRegisteredReason, "")
	svc, eps := markedCompute(t, admin, a)
	if svc.Name != "nova" || !svc.Enabled || !strings.Contains(cond.Message, svc.ID) {
		t.Errorf("service %+v; condition %q", svc, cond.Message)
	}
	defaultURL := "http://" + a.Name + "-nova-api." + testNamespace + ".svc:8774/v2.1"
	want := map[string]string{"internal": defaultURL, "public": a.Spec.Services.Nova.PublicEndpoint}
	if got := urlsIn(eps, region); !mapsEqual(got, want) {
		t.Fatalf("endpoints = %v, want %v", got, want)
	}
	internalID := endpointID(eps, "internal")

	// A changed URL is updated in place: the endpoint keeps its ID.
	patchControlPlane(t, a.Name, func(cp *c5c3v1alpha1.ControlPlane) {
		cp.Spec.Services.Nova.InternalEndpoint = "http://nova-" + suffix + ".internal:8774/v2.1"
	})
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, eps = markedCompute(t, admin, a)
		return urlsIn(eps, region)["internal"] == "http://nova-"+suffix+".internal:8774/v2.1", nil
	})
	if err != nil || endpointID(eps, "internal") != internalID || len(eps) != 2 {
		t.Fatalf("the internal URL was not updated in place: %+v", eps)
	}

	// A second ControlPlane in the region finds A's service and writes nothing.
	b := catalogControlPlane(t, "cat-b-"+suffix, region)
	if err := e.Management.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitCatalog(t, b.Name, c5c3v1alpha1.CatalogNotManagedReason, svc.ID)
	if _, found := findMarked(t, admin, b); found {
		t.Error("the second ControlPlane registered a compute service")
	}
	if _, after := markedCompute(t, admin, a); !slices.Equal(endpointIDs(after), endpointIDs(eps)) {
		t.Errorf("the second ControlPlane changed A's endpoints: %+v", after)
	}

	// A foreign compute service in a region is left alone.
	c := catalogControlPlane(t, "cat-c-"+suffix, foreignRegion)
	if err := e.Management.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitCatalog(t, c.Name, c5c3v1alpha1.CatalogNotManagedReason, foreignID)
	if _, found := findMarked(t, admin, c); found {
		t.Error("a ControlPlane registered beside a foreign compute service")
	}
	foreignBefore, err := admin.ListEndpoints(ctx, foreignID)
	if err != nil || len(foreignBefore) != 1 {
		t.Fatalf("the foreign service's endpoints: %+v, %v", foreignBefore, err)
	}
	conds := conditionTexts(t, a.Name, b.Name, c.Name)

	// Deleting the ControlPlanes removes A's rows and nothing else. B and C
	// go first: B would take the region over once A's rows are gone.
	for _, cp := range []*c5c3v1alpha1.ControlPlane{b, c, a} {
		deleteControlPlane(t, cp)
	}
	if _, found := findMarked(t, admin, a); found {
		t.Error("A's compute service outlived its ControlPlane")
	}
	if after, err := admin.ListEndpoints(ctx, foreignID); err != nil || !slices.Equal(endpointIDs(after), endpointIDs(foreignBefore)) {
		t.Errorf("the foreign service's endpoints changed: %+v, %v", after, err)
	}
	// Other packages may register the reference Nova in RegionOne meanwhile;
	// what matters is that nothing there before was taken away.
	after := endpointIDsIn(t, admin, "RegionOne")
	for _, id := range regionOne {
		if !slices.Contains(after, id) {
			t.Errorf("RegionOne's compute endpoint %s is gone: %v, were %v", id, after, regionOne)
		}
	}
	assertCatalogEvents(t, a.Name)
	texts := append(append([]string{logs.String()}, e.Management.EventMessages(t)...), conds...)
	testenv.AssertNoLeak(t, texts, append(slices.Clone(credentials), cloud.AdminCredentials().Password))
}

// catalogControlPlane builds a ControlPlane whose Keystone is the real one,
// with the cloud admin's credentials, in region.
func catalogControlPlane(t *testing.T, name, region string) *c5c3v1alpha1.ControlPlane {
	t.Helper()
	adm := cloud.AdminCredentials()
	putSecret(t, name+"-keystone-admin", map[string]string{
		"username": adm.Username, "password": adm.Password, "project_name": adm.ProjectName,
		"user_domain_name": adm.UserDomainName, "project_domain_name": adm.ProjectDomainName,
	})
	cp := buildControlPlane(t, name, false)
	ks := cp.Spec.Services.Keystone
	ks.InternalEndpoint = cloud.Endpoints[localcloud.KeystoneURL]
	ks.PublicEndpoint = cloud.Endpoints[localcloud.KeystonePublicURL]
	ks.Region = region
	ks.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-keystone-admin"}
	return cp
}

// randomSuffix keeps this run's regions and names apart from other runs'
// against the same Keystone.
func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// createRegion creates a Keystone region as the cloud admin and deletes it
// when the test ends, after the rows in it.
func createRegion(t *testing.T, id string) {
	t.Helper()
	a := cloud.AdminCredentials()
	provider, err := gcopenstack.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password, DomainName: a.UserDomainName,
		Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.ProjectDomainName},
	})
	if err != nil {
		t.Fatal("authenticating as the cloud admin failed")
	}
	identity, err := gcopenstack.NewIdentityV3(provider, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regions.Create(t.Context(), identity, regions.CreateOpts{ID: id, Description: "Anvil catalog test"}).Extract(); err != nil {
		t.Fatalf("creating region %s: %v", id, err)
	}
	t.Cleanup(func() {
		if err := regions.Delete(context.Background(), identity, id).ExtractErr(); err != nil {
			t.Logf("deleting region %s: %v", id, err)
		}
	})
}

// createForeignCompute registers a compute service Anvil did not create,
// with an internal endpoint in region, and deletes it when the test ends.
func createForeignCompute(t *testing.T, admin *openstack.Session, region string) string {
	t.Helper()
	ctx := t.Context()
	id, err := admin.CreateCatalogService(ctx, openstack.RegisteredService{Type: "compute", Name: "nova", Description: "not Anvil's", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin.DeleteCatalogService(context.Background(), id); err != nil {
			t.Logf("deleting the foreign service: %v", err)
		}
	})
	if _, err := admin.CreateEndpoint(ctx, id, openstack.RegisteredEndpoint{Interface: "internal", Region: region, URL: "http://foreign.example.com/v2.1"}); err != nil {
		t.Fatal(err)
	}
	return id
}

// removeMarked deletes, with their endpoints, the compute services this
// run's ControlPlanes registered and did not remove.
func removeMarked(admin *openstack.Session, suffix string) {
	ctx := context.Background()
	svcs, err := admin.ListCatalogServices(ctx, "compute")
	if err != nil {
		return
	}
	for _, s := range svcs {
		if strings.HasPrefix(s.Description, "Managed by Anvil") && strings.Contains(s.Description, "-"+suffix+";") {
			_ = admin.DeleteCatalogService(ctx, s.ID)
		}
	}
}

// findMarked returns the compute service carrying cp's mark, if any.
func findMarked(t *testing.T, admin *openstack.Session, cp *c5c3v1alpha1.ControlPlane) (openstack.RegisteredService, bool) {
	t.Helper()
	svcs, err := admin.ListCatalogServices(t.Context(), "compute")
	if err != nil {
		t.Fatal(err)
	}
	mark := controlplane.AccountDescription(cp)
	var found []openstack.RegisteredService
	for _, s := range svcs {
		if s.Description == mark {
			found = append(found, s)
		}
	}
	if len(found) > 1 {
		t.Errorf("%d compute services carry %s's mark", len(found), cp.Name)
	}
	if len(found) == 0 {
		return openstack.RegisteredService{}, false
	}
	return found[0], true
}

// markedCompute returns cp's compute service and its endpoints; it must
// exist.
func markedCompute(t *testing.T, admin *openstack.Session, cp *c5c3v1alpha1.ControlPlane) (openstack.RegisteredService, []openstack.RegisteredEndpoint) {
	t.Helper()
	svc, found := findMarked(t, admin, cp)
	if !found {
		t.Fatalf("no compute service carries %s's mark", cp.Name)
	}
	eps, err := admin.ListEndpoints(t.Context(), svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	return svc, eps
}

// endpointIDsIn lists the sorted IDs of every compute endpoint in region.
func endpointIDsIn(t *testing.T, admin *openstack.Session, region string) []string {
	t.Helper()
	svcs, err := admin.ListCatalogServices(t.Context(), "compute")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range svcs {
		eps, err := admin.ListEndpoints(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			if ep.Region == region {
				ids = append(ids, ep.ID)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

func urlsIn(eps []openstack.RegisteredEndpoint, region string) map[string]string {
	out := map[string]string{}
	for _, ep := range eps {
		if ep.Region == region {
			out[ep.Interface] = ep.URL
		}
	}
	return out
}

func endpointID(eps []openstack.RegisteredEndpoint, iface string) string {
	for _, ep := range eps {
		if ep.Interface == iface {
			return ep.ID
		}
	}
	return ""
}

func endpointIDs(eps []openstack.RegisteredEndpoint) []string {
	ids := make([]string, 0, len(eps))
	for _, ep := range eps {
		ids = append(ids, ep.ID)
	}
	slices.Sort(ids)
	return ids
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// waitCatalog waits until the ControlPlane's ComputeCatalogReady has the
// reason and a message containing mention.
func waitCatalog(t *testing.T, name, reason, mention string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		got = apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.ComputeCatalogReadyCondition)
		return got != nil && got.Reason == reason && strings.Contains(got.Message, mention), nil
	})
	if err != nil {
		t.Fatalf("%s: ComputeCatalogReady never reached %s naming %q (last %+v)", name, reason, mention, got)
	}
	return got
}

// conditionTexts returns the condition messages of the named ControlPlanes.
func conditionTexts(t *testing.T, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: n}, cp); err != nil {
			t.Fatal(err)
		}
		out = append(out, testenv.ConditionMessages(cp.Status.Conditions)...)
	}
	return out
}

// deleteControlPlane deletes a ControlPlane and waits until it is gone.
func deleteControlPlane(t *testing.T, cp *c5c3v1alpha1.ControlPlane) {
	t.Helper()
	if err := env.Management.Client.Delete(context.Background(), cp); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	waitGone(t, func() error {
		return env.Management.Client.Get(context.Background(), client.ObjectKeyFromObject(cp), &c5c3v1alpha1.ControlPlane{})
	})
}

// assertCatalogEvents checks that the ControlPlane recorded its
// registration and its removal.
func assertCatalogEvents(t *testing.T, name string) {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Management.Client.List(context.Background(), list, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "ControlPlane" && ev.InvolvedObject.Name == name {
			seen[ev.Reason] = true
		}
	}
	for _, r := range []string{c5c3v1alpha1.CatalogRegisteredReason, c5c3v1alpha1.CatalogRemovedEvent} {
		if !seen[r] {
			t.Errorf("no %s event on %s (saw %v)", r, name, seen)
		}
	}
}
