package openstack

import (
	"cmp"
	"context"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/endpoints"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Catalog is the Keystone work on the service catalog: the services and
// their endpoints Anvil registers. Like Accounts, it marks what it creates
// with a description, and callers delete only what carries their mark.
type Catalog interface {
	// ListCatalogServices lists the services of a type, such as "compute".
	ListCatalogServices(ctx context.Context, serviceType string) ([]RegisteredService, error)
	// CreateCatalogService creates a service and returns its ID.
	CreateCatalogService(ctx context.Context, svc RegisteredService) (string, error)
	// DeleteCatalogService deletes a service; a missing one is not an error.
	DeleteCatalogService(ctx context.Context, id string) error
	// ListEndpoints lists every endpoint of a service, in every region.
	ListEndpoints(ctx context.Context, serviceID string) ([]RegisteredEndpoint, error)
	// CreateEndpoint creates an endpoint of a service and returns its ID.
	CreateEndpoint(ctx context.Context, serviceID string, ep RegisteredEndpoint) (string, error)
	// UpdateEndpointURL changes the URL of an endpoint, keeping its ID.
	UpdateEndpointURL(ctx context.Context, id, url string) error
	// DeleteEndpoint deletes an endpoint; a missing one is not an error.
	DeleteEndpoint(ctx context.Context, id string) error
}

// RegisteredService is a catalog service as Anvil reads and creates it.
type RegisteredService struct {
	ID, Type, Name, Description string
	Enabled                     bool
}

// RegisteredEndpoint is one endpoint of a catalog service. Region is the
// region's ID; empty means an endpoint without a region.
type RegisteredEndpoint struct {
	ID, Interface, Region, URL string
}

var _ Catalog = (*Session)(nil)

// ListCatalogServices implements Catalog.
func (s *Session) ListCatalogServices(ctx context.Context, serviceType string) ([]RegisteredService, error) {
	var out []RegisteredService
	err := services.List(s.identity, services.ListOpts{ServiceType: serviceType}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := services.ExtractServices(p)
		if err != nil {
			return false, err
		}
		for _, svc := range list {
			out = append(out, RegisteredService{ID: svc.ID, Type: svc.Type, Name: svc.Name, Description: svc.Description, Enabled: svc.Enabled})
		}
		return true, nil
	})
	return out, wrap("identity: list services", err)
}

// CreateCatalogService implements Catalog.
func (s *Session) CreateCatalogService(ctx context.Context, svc RegisteredService) (string, error) {
	enabled := svc.Enabled
	created, err := services.Create(ctx, s.identity, services.CreateOpts{
		Type: svc.Type, Name: svc.Name, Description: svc.Description, Enabled: &enabled,
	}).Extract()
	if err != nil {
		return "", wrap("identity: create service", err)
	}
	return created.ID, nil
}

// DeleteCatalogService implements Catalog. Keystone deletes the service's
// endpoints with it.
func (s *Session) DeleteCatalogService(ctx context.Context, id string) error {
	return ignoreNotFound(wrap("identity: delete service", services.Delete(ctx, s.identity, id).ExtractErr()))
}

// ListEndpoints implements Catalog.
func (s *Session) ListEndpoints(ctx context.Context, serviceID string) ([]RegisteredEndpoint, error) {
	var out []RegisteredEndpoint
	err := endpoints.List(s.identity, endpoints.ListOpts{ServiceID: serviceID}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := endpoints.ExtractEndpoints(p)
		if err != nil {
			return false, err
		}
		for _, ep := range list {
			// region is the deprecated spelling of region_id; older
			// rows may carry only one of them.
			out = append(out, RegisteredEndpoint{ID: ep.ID, Interface: string(ep.Availability), Region: cmp.Or(ep.RegionID, ep.Region), URL: ep.URL})
		}
		return true, nil
	})
	return out, wrap("identity: list endpoints", err)
}

// CreateEndpoint implements Catalog.
func (s *Session) CreateEndpoint(ctx context.Context, serviceID string, ep RegisteredEndpoint) (string, error) {
	created, err := endpoints.Create(ctx, s.identity, endpoints.CreateOpts{
		ServiceID: serviceID, Availability: gophercloud.Availability(ep.Interface), Region: ep.Region, URL: ep.URL,
	}).Extract()
	if err != nil {
		return "", wrap("identity: create endpoint", err)
	}
	return created.ID, nil
}

// UpdateEndpointURL implements Catalog.
func (s *Session) UpdateEndpointURL(ctx context.Context, id, url string) error {
	_, err := endpoints.Update(ctx, s.identity, id, endpoints.UpdateOpts{URL: url}).Extract()
	return wrap("identity: update endpoint", err)
}

// DeleteEndpoint implements Catalog.
func (s *Session) DeleteEndpoint(ctx context.Context, id string) error {
	return ignoreNotFound(wrap("identity: delete endpoint", endpoints.Delete(ctx, s.identity, id).ExtractErr()))
}
