package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/domains"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/anvil/anvil/internal/dev/localcloud"
)

// fixtureDescription marks what the command creates, so a reader of
// Keystone, Nova or Neutron can tell where an object came from.
const fixtureDescription = "hypervisor operator fixture, made by anvil-dev devstack fixtures"

// fixtureImageData is the upload of the image. Nova's fake driver never
// reads it; it only needs the image active, and an image no larger than
// the flavors' disk.
const fixtureImageData = "not a disk: the devstack's Glance stub keeps only the size and hashes\n"

// gophercloudFixtures is fixtureCloud against the service set, as its admin.
type gophercloudFixtures struct {
	identity, compute, image, network *gophercloud.ServiceClient
}

// newGophercloudFixtures logs in as the set's admin and resolves every
// endpoint, so a missing one fails before anything is created.
func newGophercloudFixtures(ctx context.Context, dir string) (*gophercloudFixtures, error) {
	local, err := localcloud.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OpenStack services' state in %s: %w", dir, err)
	}
	a := local.Admin
	provider, err := gcopenstack.NewClient(a.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("the admin's auth URL in %s/clouds.yaml: %w", dir, err)
	}
	provider.HTTPClient = http.Client{Timeout: 30 * time.Second}
	err = gcopenstack.Authenticate(ctx, provider, gophercloud.AuthOptions{
		IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password, DomainName: a.UserDomainName,
		Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.ProjectDomainName},
	})
	if err != nil {
		return nil, fmt.Errorf("logging in to Keystone at %s as %s: %s (is it running? hack/openstack/openstack.sh status)", a.AuthURL, a.Username, describe(err))
	}
	eo := gophercloud.EndpointOpts{Region: a.Region, Availability: gophercloud.AvailabilityInternal}
	if a.Interface == "public" {
		eo.Availability = gophercloud.AvailabilityPublic
	}
	c := &gophercloudFixtures{}
	// Keystone is dialled at the auth URL itself, as the tests do.
	if c.identity, err = gcopenstack.NewIdentityV3(provider, gophercloud.EndpointOpts{}); err != nil {
		return nil, fmt.Errorf("identity endpoint: %w", err)
	}
	if c.compute, err = gcopenstack.NewComputeV2(provider, eo); err != nil {
		return nil, fmt.Errorf("the catalog has no compute endpoint: the sample ControlPlane's Nova registers it; "+
			"run `make devstack` and wait until `kubectl --context anvil-mgmt get controlplane -n openstack` reports Ready: %w", err)
	}
	if c.image, err = gcopenstack.NewImageV2(provider, eo); err != nil {
		return nil, fmt.Errorf("the catalog has no image endpoint (hack/openstack/openstack.sh registers the Glance stub): %w", err)
	}
	if c.network, err = gcopenstack.NewNetworkV2(provider, eo); err != nil {
		return nil, fmt.Errorf("the catalog has no network endpoint (hack/openstack/openstack.sh registers Neutron): %w", err)
	}
	return c, nil
}

func (c *gophercloudFixtures) find(ctx context.Context, f fixture, ids map[string]string) (string, error) {
	switch f.kind {
	case kindDomain:
		return c.findDomain(ctx, f.name)
	case kindProject:
		return firstID(ctx, projects.List(c.identity, projects.ListOpts{Name: f.name, DomainID: ids[f.needs[0]]}),
			projects.ExtractProjects, func(p projects.Project) string { return p.ID })
	case kindRole:
		return firstID(ctx, roles.List(c.identity, roles.ListOpts{Name: f.name}),
			roles.ExtractRoles, func(r roles.Role) string { return r.ID })
	case kindUser:
		domainID, err := c.findDomain(ctx, f.domain)
		if err != nil || domainID == "" {
			return "", err
		}
		return firstID(ctx, users.List(c.identity, users.ListOpts{Name: f.name, DomainID: domainID}),
			users.ExtractUsers, func(u users.User) string { return u.ID })
	case kindAssignment:
		return c.findAssignment(ctx, ids[f.needs[0]], ids[f.needs[1]], ids[f.needs[2]])
	case kindFlavor:
		return c.findFlavor(ctx, *f.flavor)
	case kindImage:
		return c.findImage(ctx, f.name)
	case kindNetwork:
		return firstID(ctx, networks.List(c.network, networks.ListOpts{Name: f.name}),
			networks.ExtractNetworks, func(n networks.Network) string { return n.ID })
	case kindSubnet:
		return firstID(ctx, subnets.List(c.network, subnets.ListOpts{Name: f.name, NetworkID: ids[f.needs[0]]}),
			subnets.ExtractSubnets, func(n subnets.Subnet) string { return n.ID })
	}
	return "", fmt.Errorf("no lookup for kind %q", f.kind)
}

func (c *gophercloudFixtures) create(ctx context.Context, f fixture, ids map[string]string) (string, error) {
	switch f.kind {
	case kindDomain:
		d, err := domains.Create(ctx, c.identity, domains.CreateOpts{Name: f.name, Description: fixtureDescription}).Extract()
		return createdID(err, func() string { return d.ID })
	case kindProject:
		p, err := projects.Create(ctx, c.identity, projects.CreateOpts{Name: f.name, DomainID: ids[f.needs[0]], Description: fixtureDescription}).Extract()
		return createdID(err, func() string { return p.ID })
	case kindAssignment:
		// Keystone's assignment has no ID of its own; the role's stands for it.
		roleID := ids[f.needs[0]]
		err := roles.Assign(ctx, c.identity, roleID, roles.AssignOpts{UserID: ids[f.needs[1]], ProjectID: ids[f.needs[2]]}).ExtractErr()
		return roleID, describeErr(err)
	case kindFlavor:
		return c.createFlavor(ctx, *f.flavor)
	case kindImage:
		return c.createImage(ctx, f.name)
	case kindNetwork:
		n, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: f.name, Description: fixtureDescription}).Extract()
		return createdID(err, func() string { return n.ID })
	case kindSubnet:
		s, err := subnets.Create(ctx, c.network, subnets.CreateOpts{
			NetworkID: ids[f.needs[0]], Name: f.name, CIDR: f.cidr, IPVersion: gophercloud.IPv4, Description: fixtureDescription,
		}).Extract()
		return createdID(err, func() string { return s.ID })
	}
	return "", fmt.Errorf("the command does not create a %s", f.kind)
}

func (c *gophercloudFixtures) findDomain(ctx context.Context, name string) (string, error) {
	return firstID(ctx, domains.List(c.identity, domains.ListOpts{Name: name}),
		domains.ExtractDomains, func(d domains.Domain) string { return d.ID })
}

// findAssignment returns the role's ID when the user holds it directly on
// the project, and "" otherwise.
func (c *gophercloudFixtures) findAssignment(ctx context.Context, roleID, userID, projectID string) (string, error) {
	return firstID(ctx, roles.ListAssignments(c.identity, roles.ListAssignmentsOpts{RoleID: roleID, UserID: userID, ScopeProjectID: projectID}),
		roles.ExtractRoleAssignments, func(a roles.RoleAssignment) string { return a.Role.ID })
}

// findFlavor looks a flavor up by ID when the spec has one, else by name
// among every flavor, private ones included.
func (c *gophercloudFixtures) findFlavor(ctx context.Context, spec flavorSpec) (string, error) {
	if spec.ID != "" {
		fl, err := flavors.Get(ctx, c.compute, spec.ID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return "", nil
		}
		return createdID(err, func() string { return fl.ID })
	}
	var id string
	err := flavors.ListDetail(c.compute, flavors.ListOpts{AccessType: flavors.AllAccess}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := flavors.ExtractFlavors(p)
		for _, fl := range list {
			if fl.Name == spec.Name {
				id = fl.ID
				return false, nil
			}
		}
		return true, err
	})
	return id, describeErr(err)
}

func (c *gophercloudFixtures) createFlavor(ctx context.Context, spec flavorSpec) (string, error) {
	public := true
	fl, err := flavors.Create(ctx, c.compute, flavors.CreateOpts{
		ID: spec.ID, Name: spec.Name, RAM: spec.RAM, VCPUs: spec.VCPUs, Disk: &spec.Disk, IsPublic: &public,
	}).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		return "", fmt.Errorf("a flavor named %s already exists in Nova under another ID; rename or delete it: %s", spec.Name, describe(err))
	}
	return createdID(err, func() string { return fl.ID })
}

// findImage finds an image by name. A queued one, left by a run that
// stopped between create and upload, gets its data now, so it is kept
// rather than doubled.
func (c *gophercloudFixtures) findImage(ctx context.Context, name string) (string, error) {
	var status images.ImageStatus
	id, err := firstID(ctx, images.List(c.image, images.ListOpts{Name: name}),
		images.ExtractImages, func(i images.Image) string { status = i.Status; return i.ID })
	if err != nil || id == "" {
		return "", err
	}
	if status == images.ImageStatusQueued {
		if err := c.uploadImage(ctx, id); err != nil {
			return "", err
		}
	}
	return id, nil
}

func (c *gophercloudFixtures) createImage(ctx context.Context, name string) (string, error) {
	public := images.ImageVisibilityPublic
	img, err := images.Create(ctx, c.image, images.CreateOpts{
		Name: name, DiskFormat: "qcow2", ContainerFormat: "bare", Visibility: &public,
	}).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		return "", errors.New("the running Glance stub refuses to create images: it predates the image creation of " +
			"hack/openstack/image-stub.py; restart the services (hack/openstack/openstack.sh stop, then start) and run again")
	}
	if err != nil {
		return "", describeErr(err)
	}
	return img.ID, c.uploadImage(ctx, img.ID)
}

func (c *gophercloudFixtures) uploadImage(ctx context.Context, id string) error {
	if err := imagedata.Upload(ctx, c.image, id, strings.NewReader(fixtureImageData)).ExtractErr(); err != nil {
		return fmt.Errorf("uploading the data of image %s: %w", id, describeErr(err))
	}
	return nil
}

// firstID returns the ID of the first object a listing yields, or "".
func firstID[T any](ctx context.Context, pager pagination.Pager, extract func(pagination.Page) ([]T, error), id func(T) string) (string, error) {
	var found string
	err := pager.EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := extract(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		found = id(list[0])
		return false, nil
	})
	return found, describeErr(err)
}

// createdID returns the ID of a created or fetched object, or the error
// that kept it from being.
func createdID(err error, id func() string) (string, error) {
	if err != nil {
		return "", describeErr(err)
	}
	return id(), nil
}

// describeErr shortens a gophercloud error to its status: gophercloud's
// message quotes the response body, which can echo what was sent.
func describeErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(describe(err))
}

func describe(err error) string {
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &unexpected) {
		return fmt.Sprintf("%s %s: HTTP %d", unexpected.Method, unexpected.URL, unexpected.Actual)
	}
	return err.Error()
}
