package openstack

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/aggregates"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/services"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// ComputeService is one nova-compute service record.
type ComputeService struct {
	ID, Host, Zone, Status, State, DisabledReason string
}

// ComputeServices lists, disables and deletes nova-compute services. The
// pool never enables a service: that is the hypervisor operator's call.
type ComputeServices interface {
	// ListComputeServices lists the nova-compute services, of one host when
	// host is not empty.
	ListComputeServices(ctx context.Context, host string) ([]ComputeService, error)
	// DisableService disables a service and records why.
	DisableService(ctx context.Context, id, reason string) error
	// DeleteService deletes a service; a missing one is not an error.
	DeleteService(ctx context.Context, id string) error
}

// Hypervisor is one hypervisor record.
type Hypervisor struct {
	ID, Hostname, State, Status string
	// ServiceHost is the host of the hypervisor's nova-compute service,
	// which is the node's name; Hostname is the virt driver's name for
	// it, which libvirt may report as a fully qualified name.
	ServiceHost string
}

// Hypervisors lists hypervisors.
type Hypervisors interface {
	// ListHypervisors returns every hypervisor, following the pages.
	ListHypervisors(ctx context.Context) ([]Hypervisor, error)
}

// Aggregate is one host aggregate.
type Aggregate struct {
	ID int
	// UUID is what Placement knows the aggregate by (member_of).
	UUID     string
	Name     string
	Zone     string
	Hosts    []string
	Metadata map[string]string
}

// Aggregates manages host aggregates.
type Aggregates interface {
	ListAggregates(ctx context.Context) ([]Aggregate, error)
	CreateAggregate(ctx context.Context, name, zone string) (Aggregate, error)
	SetAggregateMetadata(ctx context.Context, id int, metadata map[string]string) error
	AddAggregateHost(ctx context.Context, id int, host string) error
	RemoveAggregateHost(ctx context.Context, id int, host string) error
	DeleteAggregate(ctx context.Context, id int) error
}

// Servers counts the servers on a host.
type Servers interface {
	// CountServersOnHost counts the servers of every project on a host.
	CountServersOnHost(ctx context.Context, host string) (int, error)
}

var (
	_ ComputeServices = (*Session)(nil)
	_ Hypervisors     = (*Session)(nil)
	_ Aggregates      = (*Session)(nil)
	_ Servers         = (*Session)(nil)
)

// hypervisorPageSize is how many hypervisors one request asks for: Nova's
// default max_limit. A cloud with a lower limit answers with fewer and a
// next link, which the listing follows.
const hypervisorPageSize = 1000

// ListComputeServices implements ComputeServices. Like ListHypervisors it
// decodes the answer once, straight into the fields a pool reads: each pool
// pass lists every service of the cloud, and gophercloud's services.List
// would decode the whole list twice.
func (s *Session) ListComputeServices(ctx context.Context, host string) ([]ComputeService, error) {
	c := s.computeAt()
	query := url.Values{"binary": {"nova-compute"}}
	if host != "" {
		query.Set("host", host)
	}
	var page struct {
		Services []struct {
			ID             string `json:"id"`
			Host           string `json:"host"`
			Zone           string `json:"zone"`
			Status         string `json:"status"`
			State          string `json:"state"`
			DisabledReason string `json:"disabled_reason"`
		} `json:"services"`
	}
	if _, err := c.Get(ctx, c.ServiceURL("os-services")+"?"+query.Encode(), &page, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}}); err != nil { //nolint:bodyclose // gophercloud closes it after decoding into page
		return nil, wrap("compute: list services", err)
	}
	out := make([]ComputeService, 0, len(page.Services))
	for _, svc := range page.Services {
		out = append(out, ComputeService{ID: svc.ID, Host: svc.Host, Zone: svc.Zone, Status: svc.Status, State: svc.State, DisabledReason: svc.DisabledReason})
	}
	return out, nil
}

// DisableService implements ComputeServices.
func (s *Session) DisableService(ctx context.Context, id, reason string) error {
	_, err := services.Update(ctx, s.computeAt(), id, services.UpdateOpts{Status: services.ServiceDisabled, DisabledReason: reason}).Extract()
	return wrap("compute: disable service", err)
}

// DeleteService implements ComputeServices.
func (s *Session) DeleteService(ctx context.Context, id string) error {
	return ignoreNotFound(wrap("compute: delete service", services.Delete(ctx, s.computeAt(), id).ExtractErr()))
}

// ListHypervisors implements Hypervisors. It pages as gophercloud's
// hypervisors.List does, but decodes each page straight into the four
// fields a pool reads: the driver's details (cpu_info above all) are most
// of a big cloud's listing, and gophercloud would decode every page twice,
// once generically and once into its full type. Pool passes list every
// hypervisor of the cloud, so that cost counts.
func (s *Session) ListHypervisors(ctx context.Context) ([]Hypervisor, error) {
	c := s.computeAt()
	next := c.ServiceURL("os-hypervisors", "detail") + "?limit=" + strconv.Itoa(hypervisorPageSize)
	var out []Hypervisor
	for next != "" {
		var page hypervisorPage
		if _, err := c.Get(ctx, next, &page, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}}); err != nil { //nolint:bodyclose // gophercloud closes it after decoding into page
			return nil, wrap("compute: list hypervisors", err)
		}
		for _, h := range page.Hypervisors {
			out = append(out, Hypervisor{ID: h.ID, Hostname: h.Hostname, State: h.State, Status: h.Status, ServiceHost: h.Service.Host})
		}
		if len(page.Hypervisors) == 0 {
			// An empty page ends the listing whatever its links say, so a
			// link back to the same page cannot loop.
			break
		}
		var err error
		if next, err = gophercloud.ExtractNextURL(page.Links); err != nil {
			return nil, wrap("compute: list hypervisors", err)
		}
	}
	return out, nil
}

// hypervisorPage is the part of a page of GET /os-hypervisors/detail that
// ListHypervisors reads.
type hypervisorPage struct {
	Hypervisors []struct {
		ID       string `json:"id"`
		Hostname string `json:"hypervisor_hostname"`
		State    string `json:"state"`
		Status   string `json:"status"`
		Service  struct {
			Host string `json:"host"`
		} `json:"service"`
	} `json:"hypervisors"`
	Links []gophercloud.Link `json:"hypervisors_links"`
}

func fromAggregate(a *aggregates.Aggregate) Aggregate {
	return Aggregate{ID: a.ID, UUID: a.UUID, Name: a.Name, Zone: a.AvailabilityZone, Hosts: a.Hosts, Metadata: a.Metadata}
}

// ListAggregates implements Aggregates.
func (s *Session) ListAggregates(ctx context.Context) ([]Aggregate, error) {
	var out []Aggregate
	err := aggregates.List(s.computeAt()).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := aggregates.ExtractAggregates(p)
		for i := range list {
			out = append(out, fromAggregate(&list[i]))
		}
		return true, err
	})
	return out, wrap("compute: list aggregates", err)
}

// CreateAggregate implements Aggregates.
func (s *Session) CreateAggregate(ctx context.Context, name, zone string) (Aggregate, error) {
	a, err := aggregates.Create(ctx, s.computeAt(), aggregates.CreateOpts{Name: name, AvailabilityZone: zone}).Extract()
	if err != nil {
		return Aggregate{}, wrap("compute: create aggregate", err)
	}
	return fromAggregate(a), nil
}

// SetAggregateMetadata implements Aggregates. A nil value removes a key.
func (s *Session) SetAggregateMetadata(ctx context.Context, id int, metadata map[string]string) error {
	md := make(map[string]any, len(metadata))
	for k, v := range metadata {
		md[k] = v
	}
	_, err := aggregates.SetMetadata(ctx, s.computeAt(), id, aggregates.SetMetadataOpts{Metadata: md}).Extract()
	return wrap("compute: set aggregate metadata", err)
}

// AddAggregateHost implements Aggregates.
func (s *Session) AddAggregateHost(ctx context.Context, id int, host string) error {
	_, err := aggregates.AddHost(ctx, s.computeAt(), id, aggregates.AddHostOpts{Host: host}).Extract()
	return wrap("compute: add host to aggregate", err)
}

// RemoveAggregateHost implements Aggregates.
func (s *Session) RemoveAggregateHost(ctx context.Context, id int, host string) error {
	_, err := aggregates.RemoveHost(ctx, s.computeAt(), id, aggregates.RemoveHostOpts{Host: host}).Extract()
	return wrap("compute: remove host from aggregate", err)
}

// DeleteAggregate implements Aggregates.
func (s *Session) DeleteAggregate(ctx context.Context, id int) error {
	return ignoreNotFound(wrap("compute: delete aggregate", aggregates.Delete(ctx, s.computeAt(), id).ExtractErr()))
}

// CountServersOnHost implements Servers. It lists every project's servers
// filtered by host, which needs an admin token.
func (s *Session) CountServersOnHost(ctx context.Context, host string) (int, error) {
	n := 0
	err := servers.List(s.computeAt(), servers.ListOpts{AllTenants: true, Host: host}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := servers.ExtractServers(p)
		n += len(list)
		return true, err
	})
	return n, wrap("compute: list servers", err)
}
