package controlplane

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// What Anvil registers for Nova's API in the Keystone catalog.
const (
	computeServiceType = "compute"
	computeServiceName = "nova"
	interfaceInternal  = "internal"
	interfacePublic    = "public"
	// novaAPIPort and novaAPIPath make the default internal URL: Nova's
	// API Service and the version clients select by default.
	novaAPIPort = 8774
	novaAPIPath = "/v2.1"
)

// CatalogService is one compute service of the catalog with its endpoints
// in every region: what DecideCatalog decides over.
type CatalogService struct {
	Service   openstack.RegisteredService
	Endpoints []openstack.RegisteredEndpoint
}

// DesiredCatalog is what the spec asks the catalog to hold: the endpoints
// of the compute service in one region. No endpoints means the ControlPlane
// wants nothing registered, and what it registered before is removed.
type DesiredCatalog struct {
	// Region is services.keystone.region; empty means endpoints without a
	// region.
	Region string
	// Endpoints carry an interface and a URL; their region is Region.
	Endpoints []openstack.RegisteredEndpoint
}

// CatalogPlan is what one pass writes to the catalog, and what the
// ControlPlane holds afterwards. The zero value writes nothing.
type CatalogPlan struct {
	// Foreign is the ID of a compute service this ControlPlane did not
	// create which holds the region; the ControlPlane then manages nothing.
	Foreign string
	// ServiceID is the marked service that keeps the region's endpoints,
	// or "" when CreateService is set or nothing is wanted.
	ServiceID string
	// CreateService asks for a new marked compute service, which then
	// receives CreateEndpoints.
	CreateService bool
	// CreateEndpoints, UpdateEndpoints (ID and new URL) and
	// DeleteEndpoints (IDs) bring the keeper's endpoints to the desired ones.
	CreateEndpoints []openstack.RegisteredEndpoint
	UpdateEndpoints []openstack.RegisteredEndpoint
	DeleteEndpoints []string
	// DeleteServices are marked services that keep nothing: duplicates, or
	// every marked service when nothing is wanted or the region is foreign.
	// Their endpoints are in DeleteEndpoints.
	DeleteServices []string
}

// Writes tells whether the plan changes the catalog.
func (p CatalogPlan) Writes() bool {
	return p.CreateService || len(p.CreateEndpoints)+len(p.UpdateEndpoints)+len(p.DeleteEndpoints)+len(p.DeleteServices) > 0
}

// Keeps tells whether the ControlPlane holds a registration after the plan,
// which the accounts finalizer must then guard.
func (p CatalogPlan) Keeps() bool { return p.CreateService || p.ServiceID != "" }

// DecideCatalog plans the catalog for one ControlPlane; mark is its
// description (AccountDescription). The region's compute catalog exists
// when some compute service has an endpoint in the region. If the one with
// the lowest ID is marked, its endpoints are brought to the desired ones;
// if it is foreign, nothing but the ControlPlane's own services is touched,
// and those are removed. With no compute service in the region, the marked
// service is reused, or created, and given the endpoints. The lowest ID
// breaks the tie when two ControlPlanes registered at the same moment: both
// see the same winner. It is pure.
func DecideCatalog(existing []CatalogService, desired DesiredCatalog, mark string) CatalogPlan {
	existing = slices.SortedFunc(slices.Values(existing), func(a, b CatalogService) int { return cmp.Compare(a.Service.ID, b.Service.ID) })
	var ours []CatalogService
	holder := -1
	for i, s := range existing {
		if s.Service.Description == mark {
			ours = append(ours, s)
		}
		if holder < 0 && hasRegion(s.Endpoints, desired.Region) {
			holder = i
		}
	}
	var plan CatalogPlan
	keeper := -1
	switch {
	case len(desired.Endpoints) == 0:
	case holder >= 0 && existing[holder].Service.Description != mark:
		plan.Foreign = existing[holder].Service.ID
	case holder >= 0:
		keeper = slices.IndexFunc(ours, func(s CatalogService) bool { return s.Service.ID == existing[holder].Service.ID })
	case len(ours) > 0:
		// A marked service without endpoints here is one whose endpoints
		// were not created yet, or were in another region: it is reused.
		keeper = 0
	default:
		plan.CreateService = true
		plan.CreateEndpoints = withRegion(desired)
		return plan
	}
	for i, s := range ours {
		if i == keeper {
			plan.ServiceID = s.Service.ID
			plan.reconcileEndpoints(s.Endpoints, desired)
			continue
		}
		for _, ep := range s.Endpoints {
			plan.DeleteEndpoints = append(plan.DeleteEndpoints, ep.ID)
		}
		plan.DeleteServices = append(plan.DeleteServices, s.Service.ID)
	}
	return plan
}

// reconcileEndpoints plans the keeper's endpoints: one per desired
// interface in the region, with the desired URL, and nothing else.
func (p *CatalogPlan) reconcileEndpoints(live []openstack.RegisteredEndpoint, desired DesiredCatalog) {
	live = slices.SortedFunc(slices.Values(live), func(a, b openstack.RegisteredEndpoint) int { return cmp.Compare(a.ID, b.ID) })
	matched := map[string]bool{}
	for _, ep := range live {
		want := slices.IndexFunc(desired.Endpoints, func(d openstack.RegisteredEndpoint) bool { return d.Interface == ep.Interface })
		switch {
		case ep.Region != desired.Region || want < 0 || matched[ep.Interface]:
			p.DeleteEndpoints = append(p.DeleteEndpoints, ep.ID)
		case ep.URL != desired.Endpoints[want].URL:
			matched[ep.Interface] = true
			p.UpdateEndpoints = append(p.UpdateEndpoints, openstack.RegisteredEndpoint{ID: ep.ID, Interface: ep.Interface, Region: ep.Region, URL: desired.Endpoints[want].URL})
		default:
			matched[ep.Interface] = true
		}
	}
	for _, d := range withRegion(desired) {
		if !matched[d.Interface] {
			p.CreateEndpoints = append(p.CreateEndpoints, d)
		}
	}
}

// Summary says what the plan writes, for the event that records it; it
// names interfaces and IDs, never URLs, which are in the catalog itself.
func (p CatalogPlan) Summary() string {
	var parts []string
	if p.CreateService {
		parts = append(parts, "created the compute service")
	}
	add := func(verb string, eps []openstack.RegisteredEndpoint) {
		if len(eps) == 0 {
			return
		}
		names := make([]string, 0, len(eps))
		for _, ep := range eps {
			names = append(names, ep.Interface)
		}
		parts = append(parts, fmt.Sprintf("%s the %s endpoint", verb, strings.Join(names, " and ")))
	}
	add("created", p.CreateEndpoints)
	add("updated the URL of", p.UpdateEndpoints)
	if n := len(p.DeleteEndpoints); n > 0 {
		parts = append(parts, fmt.Sprintf("deleted %d endpoint(s) no longer wanted", n))
	}
	if len(p.DeleteServices) > 0 {
		parts = append(parts, "deleted compute service(s) "+strings.Join(p.DeleteServices, ", "))
	}
	return strings.Join(parts, "; ")
}

// hasRegion tells whether any endpoint is in region.
func hasRegion(eps []openstack.RegisteredEndpoint, region string) bool {
	return slices.ContainsFunc(eps, func(ep openstack.RegisteredEndpoint) bool { return ep.Region == region })
}

// withRegion returns the desired endpoints stamped with the region.
func withRegion(d DesiredCatalog) []openstack.RegisteredEndpoint {
	out := make([]openstack.RegisteredEndpoint, 0, len(d.Endpoints))
	for _, ep := range d.Endpoints {
		out = append(out, openstack.RegisteredEndpoint{Interface: ep.Interface, Region: d.Region, URL: ep.URL})
	}
	return out
}

// WantedCatalog is what cp asks the catalog to hold: Nova's internal URL,
// defaulting to the API Service, and the public URL when set; nothing
// while the ControlPlane runs no Nova or is deleted.
func WantedCatalog(cp *c5c3v1alpha1.ControlPlane) DesiredCatalog {
	if !wantsAccounts(cp) || cp.Spec.Services.Keystone == nil {
		return DesiredCatalog{}
	}
	nova := cp.Spec.Services.Nova
	internal := cmp.Or(nova.InternalEndpoint, fmt.Sprintf("http://%s-api.%s.svc:%d%s", NovaName(cp), cp.Namespace, novaAPIPort, novaAPIPath))
	d := DesiredCatalog{Region: cp.Spec.Services.Keystone.Region,
		Endpoints: []openstack.RegisteredEndpoint{{Interface: interfaceInternal, URL: internal}}}
	if nova.PublicEndpoint != "" {
		d.Endpoints = append(d.Endpoints, openstack.RegisteredEndpoint{Interface: interfacePublic, URL: nova.PublicEndpoint})
	}
	return d
}
