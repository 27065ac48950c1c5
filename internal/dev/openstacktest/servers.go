package openstacktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

const (
	// fakeImageID is the fixed image hack/openstack's Glance stub serves.
	fakeImageID = "a0a0a0a0-0000-4000-8000-000000000001"
	// tinyFlavor is the flavor test servers boot with.
	tinyFlavor = "anvil-tiny"
)

// computeClient is a raw compute client for what only tests do, such as
// booting servers; Anvil's own code never creates servers.
func (c *Cloud) computeClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	a := c.admin
	provider, err := gcopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password, DomainName: a.UserDomainName,
		Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.ProjectDomainName},
	})
	if err != nil {
		return nil, errors.New("authenticating the test compute client failed")
	}
	cc, err := gcopenstack.NewComputeV2(provider, gophercloud.EndpointOpts{Region: a.Region, Availability: gophercloud.AvailabilityInternal})
	if err != nil {
		return nil, err
	}
	// 2.37 lets a server boot without a network. A port would need an OVN
	// chassis on the server's host (StartChassis), which these servers'
	// hosts do not run.
	cc.Microversion = "2.53"
	return cc, nil
}

// BootServer boots a server on host with the fake driver, waits until it
// is ACTIVE, and deletes it when the test ends.
func (c *Cloud) BootServer(tb testing.TB, name, host string) string {
	tb.Helper()
	ctx := tb.Context()
	cc, err := c.computeClient(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	disk := 0
	_, err = flavors.Create(ctx, cc, flavors.CreateOpts{ID: tinyFlavor, Name: tinyFlavor, RAM: 64, VCPUs: 1, Disk: &disk}).Extract()
	var unexpected gophercloud.ErrUnexpectedResponseCode
	exists := errors.As(err, &unexpected) && unexpected.Actual == http.StatusConflict
	if err != nil && !exists {
		tb.Fatalf("creating the test flavor: HTTP error %v", statusOnly(err))
	}
	srv, err := servers.Create(ctx, cc, servers.CreateOpts{
		Name: name, ImageRef: fakeImageID, FlavorRef: tinyFlavor,
		// An admin may pin a host through the zone.
		AvailabilityZone: "nova:" + host,
		Networks:         "none",
	}, nil).Extract()
	if err != nil {
		tb.Fatalf("booting %s on %s: %v", name, host, statusOnly(err))
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = servers.Delete(ctx, cc, srv.ID).ExtractErr()
		for ctx.Err() == nil {
			if _, err := servers.Get(ctx, cc, srv.ID).Extract(); err != nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	// A deadline, not a measurement. In a fresh `make test` on two cores
	// a build waited more than two minutes: its host's nova-compute had
	// just been restarted by a rollout and started slowly while the other
	// packages compiled.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := servers.WaitForStatus(wctx, cc, srv.ID, "ACTIVE"); err != nil {
		tb.Fatalf("server %s on %s did not become ACTIVE: %v (%s)", name, host, statusOnly(err), serverState(ctx, cc, srv.ID))
	}
	return srv.ID
}

// serverState describes where a server's build stands: status, task and
// VM state, and the host Nova placed it on; fields that hold no secret.
func serverState(ctx context.Context, cc *gophercloud.ServiceClient, id string) string {
	srv, err := servers.Get(ctx, cc, id).Extract()
	if err != nil {
		return fmt.Sprintf("reading the server: %v", statusOnly(err))
	}
	return fmt.Sprintf("status %s, task state %q, VM state %q, host %q", srv.Status, srv.TaskState, srv.VmState, srv.Host)
}

// statusOnly keeps only the status of an HTTP error, since gophercloud's
// message quotes the response body.
func statusOnly(err error) any {
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &unexpected) {
		return unexpected.Actual
	}
	return err
}

// DeleteServer deletes a server and waits until Nova no longer lists it.
func (c *Cloud) DeleteServer(tb testing.TB, id string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	cc, err := c.computeClient(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if err := servers.Delete(ctx, cc, id).ExtractErr(); err != nil {
		tb.Fatalf("deleting server %s: %v", id, statusOnly(err))
	}
	for ctx.Err() == nil {
		if _, err := servers.Get(ctx, cc, id).Extract(); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	tb.Fatalf("server %s is still listed", id)
}
