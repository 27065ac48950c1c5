package osim_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/anvil/anvil/internal/dev/osim"
	"github.com/anvil/anvil/internal/openstack"
)

// The operator's own client decodes every answer: what gophercloud cannot
// read, the pools could not either.
func TestSimulatorThroughTheOperatorsClient(t *testing.T) {
	sim, err := osim.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	ctx := t.Context()
	s, err := openstack.NewSession(ctx, openstack.Credentials{
		AuthURL: sim.KeystoneURL(), Username: "nova", Password: "sim-password", ProjectName: "service",
		UserDomainName: "Default", ProjectDomainName: "Default", Region: osim.Region, Interface: "internal",
	})
	if err != nil {
		t.Fatal(err)
	}

	// 2,100 hosts take three pages of the operator's 1,000.
	const hosts = 2100
	for i := range hosts {
		sim.ComputeStarted(fmt.Sprintf("node-%03d", i))
	}
	if got := sim.ComputeStarted("node-000"); got {
		t.Error("a second start registered a second service")
	}
	hvs, err := s.ListHypervisors(ctx)
	if err != nil || len(hvs) != 0 {
		t.Fatalf("before discovery: %d hypervisors, %v; want none", len(hvs), err)
	}
	if n := sim.DiscoverHosts(); n != hosts {
		t.Fatalf("discovery mapped %d hosts, want %d", n, hosts)
	}
	svcs, err := s.ListComputeServices(ctx, "")
	if err != nil || len(svcs) != hosts {
		t.Fatalf("services: %d, %v; want %d", len(svcs), err, hosts)
	}
	if svcs[0].State != "up" || svcs[0].Status != "enabled" || svcs[0].ID == "" {
		t.Errorf("service %+v is not an up, enabled service with an id", svcs[0])
	}
	hvs, err = s.ListHypervisors(ctx)
	if err != nil || len(hvs) != hosts {
		t.Fatalf("hypervisors: %d, %v; want %d", len(hvs), err, hosts)
	}
	if hvs[0].ServiceHost == "" || hvs[0].Hostname != hvs[0].ServiceHost {
		t.Errorf("hypervisor %+v does not name its service host", hvs[0])
	}

	one, err := s.ListComputeServices(ctx, "node-007")
	if err != nil || len(one) != 1 {
		t.Fatalf("services of node-007: %v, %v", one, err)
	}
	if err := s.DisableService(ctx, one[0].ID, "anvil: leaving"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountServersOnHost(ctx, "node-007"); err != nil || n != 0 {
		t.Fatalf("servers on node-007: %d, %v", n, err)
	}
	if err := s.DeleteService(ctx, one[0].ID); err != nil {
		t.Fatal(err)
	}
	if svcs, _ := s.ListComputeServices(ctx, ""); len(svcs) != hosts-1 {
		t.Errorf("after a delete: %d services, want %d", len(svcs), hosts-1)
	}

	a, err := s.CreateAggregate(ctx, "az-a", "az-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAggregate(ctx, "az-a", "az-a"); !openstack.IsConflict(err) {
		t.Errorf("a second aggregate of the same name: %v, want a conflict", err)
	}
	if err := s.SetAggregateMetadata(ctx, a.ID, map[string]string{"anvil": "ns/nova"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddAggregateHost(ctx, a.ID, "node-001"); err != nil {
		t.Fatal(err)
	}
	aggs, err := s.ListAggregates(ctx)
	if err != nil || len(aggs) != 1 || aggs[0].Zone != "az-a" || !slices.Equal(aggs[0].Hosts, []string{"node-001"}) || aggs[0].Metadata["anvil"] != "ns/nova" {
		t.Fatalf("aggregates: %+v, %v", aggs, err)
	}
	if zoned, _ := s.ListComputeServices(ctx, "node-001"); len(zoned) != 1 || zoned[0].Zone != "az-a" {
		t.Errorf("a host in a zone aggregate reports zone %+v, want az-a", zoned)
	}
	if err := s.RemoveAggregateHost(ctx, a.ID, "node-001"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAggregate(ctx, a.ID); err != nil {
		t.Fatal(err)
	}

	if err := s.EnsureTrait(ctx, "CUSTOM_GPU"); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTrait(ctx, "CUSTOM_GPU"); err != nil {
		t.Fatalf("ensuring an existing trait: %v", err)
	}
	rps, err := s.ListResourceProviders(ctx, "node-002")
	if err != nil || len(rps) != 1 {
		t.Fatalf("resource providers of node-002: %+v, %v", rps, err)
	}
	if err := s.SetProviderTraits(ctx, rps[0].UUID, rps[0].Generation, []string{"CUSTOM_GPU"}); err != nil {
		t.Fatal(err)
	}
	traits, gen, err := s.ProviderTraits(ctx, rps[0].UUID)
	if err != nil || !slices.Equal(traits, []string{"CUSTOM_GPU"}) || gen != rps[0].Generation+1 {
		t.Fatalf("provider traits: %v generation %d, %v", traits, gen, err)
	}
	if err := s.SetProviderTraits(ctx, rps[0].UUID, rps[0].Generation, nil); !openstack.IsConflict(err) {
		t.Errorf("a stale generation: %v, want a conflict", err)
	}
}
