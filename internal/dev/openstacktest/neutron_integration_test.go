package openstacktest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var cloud *openstacktest.Cloud

// TestMain starts the set once for the package's integration tests; under
// -short it starts nothing and they skip.
func TestMain(m *testing.M) {
	os.Exit(openstacktest.Run(&cloud, m.Run))
}

// TestIntegrationNeutronBindsToChassis proves the set's Neutron is real
// ML2/OVN: a network, subnet and port land in the OVN Northbound database,
// a chassis of Debian's OVS and OVN programs shows up as an alive agent,
// binding the port to its host gives vif_type ovs, and plugging it there
// makes the port ACTIVE.
func TestIntegrationNeutronBindsToChassis(t *testing.T) {
	// A long suite of the dev tree; make test keeps the chassis and
	// metadata agent suites, which use the same Neutron.
	testenv.Long(t, "test-all")
	c := openstacktest.Require(t, cloud)
	ctx := t.Context()
	nc, err := c.NetworkClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	suffix := time.Now().UnixNano() % 1_000_000_000
	host := fmt.Sprintf("anvil-chassis-%d", suffix)

	// First, so that it stops after the port is gone: a chassis that stops
	// under a bound port makes Neutron update the port as the test deletes
	// it, which it logs as an error.
	ch := c.StartChassis(t, host)

	net, err := networks.Create(ctx, nc, networks.CreateOpts{Name: fmt.Sprintf("anvil-net-%d", suffix)}).Extract()
	if err != nil {
		t.Fatalf("creating a network: %v", err)
	}
	t.Cleanup(func() { deleteQuietly(t, "network", networks.Delete(context.Background(), nc, net.ID).ExtractErr()) })
	subnet, err := subnets.Create(ctx, nc, subnets.CreateOpts{
		NetworkID: net.ID, Name: fmt.Sprintf("anvil-subnet-%d", suffix), IPVersion: gophercloud.IPv4, CIDR: "10.77.0.0/24",
	}).Extract()
	if err != nil {
		t.Fatalf("creating a subnet: %v", err)
	}
	t.Cleanup(func() { deleteQuietly(t, "subnet", subnets.Delete(context.Background(), nc, subnet.ID).ExtractErr()) })
	port, err := ports.Create(ctx, nc, ports.CreateOpts{NetworkID: net.ID, Name: fmt.Sprintf("anvil-port-%d", suffix)}).Extract()
	if err != nil {
		t.Fatalf("creating a port: %v", err)
	}
	t.Cleanup(func() { deleteQuietly(t, "port", ports.Delete(context.Background(), nc, port.ID).ExtractErr()) })

	// ML2/OVN names a network's logical switch neutron-<network id>.
	if sw := c.OVNNorthbound(t, "ls-list"); !strings.Contains(sw, "neutron-"+net.ID) {
		t.Fatalf("the Northbound database has no switch for network %s:\n%s", net.ID, sw)
	}
	if lsps := c.OVNNorthbound(t, "lsp-list", "neutron-"+net.ID); !strings.Contains(lsps, port.ID) {
		t.Fatalf("switch neutron-%s has no logical port %s:\n%s", net.ID, port.ID, lsps)
	}

	// ML2/OVN refuses to bind to a host whose agent is dead, and the agent
	// comes alive once ovn-controller has caught up with the Southbound.
	waitFor(t, "an alive OVN Controller agent on "+host, 90*time.Second, func() (bool, string) {
		all, err := openstacktest.NetworkAgents(ctx, nc, host)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range all {
			if a.AgentType == "OVN Controller agent" && a.Alive {
				return true, ""
			}
		}
		return false, fmt.Sprintf("agents %+v", all)
	})

	var bound struct {
		ports.Port
		portsbinding.PortsBindingExt
	}
	err = ports.Update(ctx, nc, port.ID, portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{}, HostID: &host,
	}).ExtractInto(&bound)
	if err != nil {
		t.Fatalf("binding port %s to %s: %v", port.ID, host, err)
	}
	if bound.VIFType != "ovs" {
		t.Fatalf("port %s bound to %s has binding:vif_type %q, want ovs (host %q, details %v)",
			port.ID, host, bound.VIFType, bound.HostID, bound.VIFDetails)
	}

	ch.Plug(t, port.ID)
	waitFor(t, "port "+port.ID+" to become ACTIVE", 90*time.Second, func() (bool, string) {
		p, err := ports.Get(ctx, nc, port.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return p.Status == "ACTIVE", "status " + p.Status
	})
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last: %s", timeout, what, last)
		}
		time.Sleep(time.Second)
	}
}

func deleteQuietly(t *testing.T, what string, err error) {
	if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		t.Logf("cleanup of the test %s: %v", what, err)
	}
}
