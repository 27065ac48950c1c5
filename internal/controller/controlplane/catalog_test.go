package controlplane

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

const testMark = "Managed by Anvil for ControlPlane ns/cp; do not edit."

func ep(id, iface, region, url string) openstack.RegisteredEndpoint {
	return openstack.RegisteredEndpoint{ID: id, Interface: iface, Region: region, URL: url}
}

func svc(id, description string, eps ...openstack.RegisteredEndpoint) CatalogService {
	return CatalogService{Service: openstack.RegisteredService{ID: id, Type: "compute", Name: "nova", Description: description, Enabled: true}, Endpoints: eps}
}

func TestDecideCatalog(t *testing.T) {
	const in, pub = "http://cp-nova-api.ns.svc:8774/v2.1", "https://nova.example.com/v2.1"
	both := DesiredCatalog{Region: "R", Endpoints: []openstack.RegisteredEndpoint{{Interface: "internal", URL: in}, {Interface: "public", URL: pub}}}
	internalOnly := DesiredCatalog{Region: "R", Endpoints: []openstack.RegisteredEndpoint{{Interface: "internal", URL: in}}}
	noRegion := DesiredCatalog{Endpoints: []openstack.RegisteredEndpoint{{Interface: "internal", URL: in}}}
	tests := []struct {
		name     string
		existing []CatalogService
		desired  DesiredCatalog
		want     CatalogPlan
	}{
		{name: "an empty catalog: create the service and both endpoints", desired: both,
			want: CatalogPlan{CreateService: true, CreateEndpoints: []openstack.RegisteredEndpoint{ep("", "internal", "R", in), ep("", "public", "R", pub)}}},
		{name: "compute only in other regions: create ours", desired: internalOnly,
			existing: []CatalogService{svc("f1", "", ep("e1", "internal", "RegionOne", "http://x"))},
			want:     CatalogPlan{CreateService: true, CreateEndpoints: []openstack.RegisteredEndpoint{ep("", "internal", "R", in)}}},
		{name: "settled: nothing to write", desired: both,
			existing: []CatalogService{svc("s1", testMark, ep("e1", "internal", "R", in), ep("e2", "public", "R", pub))},
			want:     CatalogPlan{ServiceID: "s1"}},
		{name: "a changed URL is updated in place", desired: both,
			existing: []CatalogService{svc("s1", testMark, ep("e1", "internal", "R", "http://old"), ep("e2", "public", "R", pub))},
			want:     CatalogPlan{ServiceID: "s1", UpdateEndpoints: []openstack.RegisteredEndpoint{ep("e1", "internal", "R", in)}}},
		{name: "a missing interface is created, an unwanted one deleted", desired: internalOnly,
			existing: []CatalogService{svc("s1", testMark, ep("e2", "public", "R", pub), ep("e3", "admin", "R", in))},
			want: CatalogPlan{ServiceID: "s1", CreateEndpoints: []openstack.RegisteredEndpoint{ep("", "internal", "R", in)},
				DeleteEndpoints: []string{"e2", "e3"}}},
		{name: "a duplicate interface is deleted", desired: internalOnly,
			existing: []CatalogService{svc("s1", testMark, ep("e2", "internal", "R", in), ep("e1", "internal", "R", in))},
			want:     CatalogPlan{ServiceID: "s1", DeleteEndpoints: []string{"e2"}}},
		{name: "our service without endpoints is reused", desired: internalOnly,
			existing: []CatalogService{svc("s1", testMark)},
			want:     CatalogPlan{ServiceID: "s1", CreateEndpoints: []openstack.RegisteredEndpoint{ep("", "internal", "R", in)}}},
		{name: "a region change moves our endpoints", desired: internalOnly,
			existing: []CatalogService{svc("s1", testMark, ep("e1", "internal", "Old", in))},
			want: CatalogPlan{ServiceID: "s1", CreateEndpoints: []openstack.RegisteredEndpoint{ep("", "internal", "R", in)},
				DeleteEndpoints: []string{"e1"}}},
		{name: "a foreign service in the region: touch nothing", desired: both,
			existing: []CatalogService{svc("f1", "", ep("e1", "internal", "R", "http://theirs"))},
			want:     CatalogPlan{Foreign: "f1"}},
		{name: "another ControlPlane's service is foreign", desired: both,
			existing: []CatalogService{svc("f1", "Managed by Anvil for ControlPlane ns/other; do not edit.", ep("e1", "internal", "R", in))},
			want:     CatalogPlan{Foreign: "f1"}},
		{name: "a foreign holder makes ours go", desired: internalOnly,
			existing: []CatalogService{svc("s9", testMark, ep("e9", "internal", "Old", in)), svc("f1", "", ep("e1", "public", "R", "http://theirs"))},
			want:     CatalogPlan{Foreign: "f1", DeleteEndpoints: []string{"e9"}, DeleteServices: []string{"s9"}}},
		{name: "two in the region: the lowest ID holds it, ours", desired: internalOnly,
			existing: []CatalogService{svc("b", "", ep("e2", "internal", "R", "http://theirs")), svc("a", testMark, ep("e1", "internal", "R", in))},
			want:     CatalogPlan{ServiceID: "a"}},
		{name: "two in the region: the lowest ID holds it, foreign", desired: internalOnly,
			existing: []CatalogService{svc("b", testMark, ep("e2", "internal", "R", in)), svc("a", "", ep("e1", "internal", "R", "http://theirs"))},
			want:     CatalogPlan{Foreign: "a", DeleteEndpoints: []string{"e2"}, DeleteServices: []string{"b"}}},
		{name: "duplicates of ours are deleted", desired: internalOnly,
			existing: []CatalogService{svc("s2", testMark), svc("s1", testMark, ep("e1", "internal", "R", in))},
			want:     CatalogPlan{ServiceID: "s1", DeleteServices: []string{"s2"}}},
		{name: "no region means endpoints without one", desired: noRegion,
			existing: []CatalogService{svc("f1", "", ep("e1", "internal", "RegionOne", "http://x"))},
			want:     CatalogPlan{CreateService: true, CreateEndpoints: []openstack.RegisteredEndpoint{ep("", "internal", "", in)}}},
		{name: "nothing wanted: ours go, foreign stay", desired: DesiredCatalog{Region: "R"},
			existing: []CatalogService{svc("f1", "", ep("e1", "internal", "R", "http://x")), svc("s1", testMark, ep("e2", "internal", "R", in), ep("e3", "public", "R", pub))},
			want:     CatalogPlan{DeleteEndpoints: []string{"e2", "e3"}, DeleteServices: []string{"s1"}}},
		{name: "nothing wanted and nothing ours: no writes", desired: DesiredCatalog{},
			existing: []CatalogService{svc("f1", "", ep("e1", "internal", "R", "http://x"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideCatalog(tt.existing, tt.desired, testMark)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecideCatalog =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestWantedCatalog(t *testing.T) {
	cp := func(mutate func(*c5c3v1alpha1.ControlPlane)) *c5c3v1alpha1.ControlPlane {
		c := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns"}}
		c.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{Region: "R"}
		c.Spec.Services.Nova = &c5c3v1alpha1.NovaServiceSpec{}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	now := metav1.NewTime(time.Now())
	tests := []struct {
		name string
		cp   *c5c3v1alpha1.ControlPlane
		want DesiredCatalog
	}{
		{name: "the default internal URL is Nova's API Service", cp: cp(nil),
			want: DesiredCatalog{Region: "R", Endpoints: []openstack.RegisteredEndpoint{{Interface: "internal", URL: "http://cp-nova-api.ns.svc:8774/v2.1"}}}},
		{name: "both URLs given", cp: cp(func(c *c5c3v1alpha1.ControlPlane) {
			c.Spec.Services.Nova.InternalEndpoint, c.Spec.Services.Nova.PublicEndpoint = "http://in/v2.1", "https://pub/v2.1"
		}), want: DesiredCatalog{Region: "R", Endpoints: []openstack.RegisteredEndpoint{{Interface: "internal", URL: "http://in/v2.1"}, {Interface: "public", URL: "https://pub/v2.1"}}}},
		{name: "no Nova: nothing", cp: cp(func(c *c5c3v1alpha1.ControlPlane) { c.Spec.Services.Nova = nil })},
		{name: "deleted: nothing", cp: cp(func(c *c5c3v1alpha1.ControlPlane) { c.DeletionTimestamp = &now })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WantedCatalog(tt.cp); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("WantedCatalog = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// fakeCatalog is an in-memory Keystone catalog that counts writes.
type fakeCatalog struct {
	openstack.Accounts
	services  []openstack.RegisteredService
	endpoints map[string][]openstack.RegisteredEndpoint
	writes    []string
	next      int
	fail      error
}

func (f *fakeCatalog) id() string { f.next++; return fmt.Sprintf("id%02d", f.next) }

func (f *fakeCatalog) ListCatalogServices(_ context.Context, typ string) ([]openstack.RegisteredService, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return slices.DeleteFunc(slices.Clone(f.services), func(s openstack.RegisteredService) bool { return s.Type != typ }), nil
}

func (f *fakeCatalog) CreateCatalogService(_ context.Context, s openstack.RegisteredService) (string, error) {
	s.ID = f.id()
	f.services = append(f.services, s)
	f.writes = append(f.writes, "create service")
	return s.ID, nil
}

func (f *fakeCatalog) DeleteCatalogService(_ context.Context, id string) error {
	f.services = slices.DeleteFunc(f.services, func(s openstack.RegisteredService) bool { return s.ID == id })
	delete(f.endpoints, id)
	f.writes = append(f.writes, "delete service "+id)
	return nil
}

func (f *fakeCatalog) ListEndpoints(_ context.Context, serviceID string) ([]openstack.RegisteredEndpoint, error) {
	return slices.Clone(f.endpoints[serviceID]), nil
}

func (f *fakeCatalog) CreateEndpoint(_ context.Context, serviceID string, e openstack.RegisteredEndpoint) (string, error) {
	e.ID = f.id()
	f.endpoints[serviceID] = append(f.endpoints[serviceID], e)
	f.writes = append(f.writes, "create endpoint "+e.Interface)
	return e.ID, nil
}

func (f *fakeCatalog) UpdateEndpointURL(_ context.Context, id, url string) error {
	for _, eps := range f.endpoints {
		for i := range eps {
			if eps[i].ID == id {
				eps[i].URL = url
			}
		}
	}
	f.writes = append(f.writes, "update endpoint "+id)
	return nil
}

func (f *fakeCatalog) DeleteEndpoint(_ context.Context, id string) error {
	for s, eps := range f.endpoints {
		f.endpoints[s] = slices.DeleteFunc(eps, func(e openstack.RegisteredEndpoint) bool { return e.ID == id })
	}
	f.writes = append(f.writes, "delete endpoint "+id)
	return nil
}

// TestReconcileCatalog drives the step over an in-memory catalog: it
// registers, then writes nothing once settled, updates a URL in place,
// leaves a foreign region alone and removes only its own rows.
func TestReconcileCatalog(t *testing.T) {
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns", Generation: 1,
		Finalizers: []string{c5c3v1alpha1.AccountsFinalizer}}}
	cp.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{Region: "R", AdminCredentialsSecretRef: &anvilmeta.LocalObjectReference{Name: "admin"}}
	cp.Spec.Services.Nova = &c5c3v1alpha1.NovaServiceSpec{PublicEndpoint: "https://nova.example.com/v2.1"}
	foreign := openstack.RegisteredService{ID: "zz-foreign", Type: "compute", Name: "nova"}
	ks := &fakeCatalog{services: []openstack.RegisteredService{foreign},
		endpoints: map[string][]openstack.RegisteredEndpoint{foreign.ID: {ep("zz-e", "internal", "RegionOne", "http://theirs")}}}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	run := func() (*pass, error) {
		ks.writes = nil
		p := &pass{cp: cp, keystone: ks}
		_, err := r.reconcileCatalog(context.Background(), p)
		return p, err
	}
	reason := func() string {
		return apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.ComputeCatalogReadyCondition).Reason
	}

	p, err := run()
	if err != nil || reason() != c5c3v1alpha1.CatalogRegisteredReason || !p.catalogHeld {
		t.Fatalf("first pass: %v, %s, held %v", err, reason(), p.catalogHeld)
	}
	if want := []string{"create service", "create endpoint internal", "create endpoint public"}; !slices.Equal(ks.writes, want) {
		t.Errorf("writes = %v, want %v", ks.writes, want)
	}
	if e := <-rec.Events; !strings.Contains(e, c5c3v1alpha1.CatalogRegisteredReason) {
		t.Errorf("event = %q", e)
	}
	if _, err := run(); err != nil || len(ks.writes) != 0 || len(rec.Events) != 0 {
		t.Errorf("a settled pass: %v, writes %v, %d events", err, ks.writes, len(rec.Events))
	}

	cp.Spec.Services.Nova.InternalEndpoint = "http://nova.internal/v2.1"
	if _, err := run(); err != nil || len(ks.writes) != 1 || !strings.HasPrefix(ks.writes[0], "update endpoint") {
		t.Errorf("a URL change: %v, writes %v", err, ks.writes)
	}
	<-rec.Events

	// Another ControlPlane in the region sees this one's service as foreign.
	other := cp.DeepCopy()
	other.Name, other.Finalizers = "other", nil
	op := &pass{cp: other, keystone: ks}
	ks.writes = nil
	out, err := r.reconcileCatalog(context.Background(), op)
	c := apimeta.FindStatusCondition(other.Status.Conditions, c5c3v1alpha1.ComputeCatalogReadyCondition)
	if err != nil || c.Reason != c5c3v1alpha1.CatalogNotManagedReason || !strings.Contains(c.Message, "id01") || len(ks.writes) != 0 ||
		out.RequeueAfter != foreignRequeue || op.catalogHeld {
		t.Errorf("second ControlPlane: %v, %+v, writes %v, outcome %+v", err, c, ks.writes, out)
	}

	// Deleting removes this ControlPlane's rows only.
	now := metav1.NewTime(time.Now())
	cp.DeletionTimestamp = &now
	if p, err := run(); err != nil || p.catalogHeld {
		t.Fatalf("teardown: %v, held %v", err, p.catalogHeld)
	}
	if len(ks.services) != 1 || ks.services[0].ID != foreign.ID || len(ks.endpoints[foreign.ID]) != 1 {
		t.Errorf("after teardown: services %+v, endpoints %+v", ks.services, ks.endpoints)
	}
	if e := <-rec.Events; !strings.Contains(e, c5c3v1alpha1.CatalogRemovedEvent) {
		t.Errorf("event = %q", e)
	}

	// A failing Keystone is CatalogError, carrying only the wrapped text.
	cp.DeletionTimestamp = nil
	ks.fail = &openstack.APIError{Op: "identity: list services", StatusCode: 503}
	if _, err := run(); flow.ReasonOf(err) != c5c3v1alpha1.CatalogErrorReason || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("a Keystone failure: %v", err)
	}
	var se *flow.StepError
	if !errors.As(catalogError(flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForAdminCredentialsReason, time.Second, "x")), &se) ||
		se.Condition != c5c3v1alpha1.ComputeCatalogReadyCondition || se.Reason != c5c3v1alpha1.WaitingForAdminCredentialsReason {
		t.Errorf("the admin credentials wait moved to %+v", se)
	}
}

// TestReconcileCatalogNotManaged: without admin credentials or without a
// Nova, the step reports CatalogNotManaged and calls no Keystone.
func TestReconcileCatalogNotManaged(t *testing.T) {
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns"}}
	cp.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{Region: "R"}
	cp.Spec.Services.Nova = &c5c3v1alpha1.NovaServiceSpec{}
	r := &Reconciler{}
	for _, tt := range []struct{ name, want string }{{"no admin credentials", "adminCredentialsSecretRef"}, {"no Nova", "services.nova"}} {
		if tt.name == "no Nova" {
			cp.Spec.Services.Nova = nil
		}
		if _, err := r.reconcileCatalog(context.Background(), &pass{cp: cp}); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		c := apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.ComputeCatalogReadyCondition)
		if c.Status != metav1.ConditionTrue || c.Reason != c5c3v1alpha1.CatalogNotManagedReason || !strings.Contains(c.Message, tt.want) {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
}
