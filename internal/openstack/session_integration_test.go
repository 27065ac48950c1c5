package openstack_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/openstack"
)

var cloud *openstacktest.Cloud

// TestMain starts the real services once for the package; under -short it
// starts nothing and the integration tests skip.
func TestMain(m *testing.M) {
	os.Exit(openstacktest.RunWithNova(&cloud, m.Run))
}

func requireCloud(t *testing.T) (*openstacktest.Cleanup, *openstack.Session) {
	t.Helper()
	return openstacktest.Require(t, cloud).ForTest(t)
}

// unique gives names that do not collide with a previous run's leftovers.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
}

func TestIntegrationIdentity(t *testing.T) {
	cl, s := requireCloud(t)
	ctx := t.Context()

	project := unique("anvil-project")
	projectID := cl.Project(project)
	if got, err := s.FindProject(ctx, project, "default"); err != nil || got != projectID {
		t.Fatalf("FindProject = %q, %v", got, err)
	}
	if again, err := s.EnsureProject(ctx, project, "default"); err != nil || again != projectID {
		t.Errorf("EnsureProject is not idempotent: %q, %v", again, err)
	}
	if missing, err := s.FindProject(ctx, unique("nope"), "default"); err != nil || missing != "" {
		t.Errorf("FindProject of a missing project = %q, %v", missing, err)
	}

	user := unique("anvil-user")
	userID := cl.User(user, "first-PASSWORD-1")
	roleID, err := s.FindRole(ctx, "admin")
	if err != nil || roleID == "" {
		t.Fatalf("FindRole(admin) = %q, %v", roleID, err)
	}
	if has, err := s.HasRole(ctx, roleID, userID, projectID); err != nil || has {
		t.Fatalf("a new user already holds the role: %v, %v", has, err)
	}
	for range 2 {
		if err := s.AssignRole(ctx, roleID, userID, projectID); err != nil {
			t.Fatalf("AssignRole: %v", err)
		}
	}
	if has, err := s.HasRole(ctx, roleID, userID, projectID); err != nil || !has {
		t.Errorf("HasRole after AssignRole = %v, %v", has, err)
	}

	// The user authenticates, and a rotated password takes effect.
	creds := cloud.AdminCredentials()
	creds.Username, creds.Password, creds.ProjectName = user, "first-PASSWORD-1", project
	if _, err := openstack.NewSession(ctx, creds); err != nil {
		t.Fatalf("the new user cannot authenticate: %v", err)
	}
	if _, err := s.EnsureUser(ctx, user, "default", "second-PASSWORD-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := openstack.NewSession(ctx, creds); err == nil {
		t.Error("the old password still works after rotation")
	} else if strings.Contains(err.Error(), "first-PASSWORD-1") {
		t.Error("the authentication error carries the password")
	}
	creds.Password = "second-PASSWORD-2"
	if _, err := openstack.NewSession(ctx, creds); err != nil {
		t.Errorf("the rotated password does not work: %v", err)
	}

	catalog, err := s.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range catalog {
		types = append(types, c.Type)
	}
	for _, want := range []string{"identity", "compute", "placement"} {
		if !slices.Contains(types, want) {
			t.Errorf("catalog lacks %s: %v", want, types)
		}
	}
}

func TestIntegrationComputeServicesAggregatesAndPlacement(t *testing.T) {
	cl, s := requireCloud(t)
	ctx := t.Context()
	host := unique("anvil-hv")
	cloud.StartCompute(t, host)

	svcs, err := s.ListComputeServices(ctx, host)
	if err != nil || len(svcs) != 1 || svcs[0].Status != "enabled" {
		t.Fatalf("services of %s = %+v, %v", host, svcs, err)
	}
	svc := svcs[0]
	t.Cleanup(func() { _ = s.DeleteService(context.Background(), svc.ID) })

	// The hypervisor list, with paging, has the host once it is mapped into
	// its cell, which host discovery does.
	cloud.DiscoverHosts(t)
	var hvs []openstack.Hypervisor
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if hvs, err = s.ListHypervisors(ctx); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(hvs, func(h openstack.Hypervisor) bool { return h.Hostname == host }) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !slices.ContainsFunc(hvs, func(h openstack.Hypervisor) bool { return h.Hostname == host }) {
		t.Fatalf("hypervisors %+v lack %s", hvs, host)
	}
	// The service host names the node even where the driver's hypervisor
	// hostname would not.
	if !slices.ContainsFunc(hvs, func(h openstack.Hypervisor) bool { return h.ServiceHost == host }) {
		t.Errorf("no hypervisor has the service host %s", host)
	}

	// A disabled service keeps its reason.
	reason := "c5c3.io: leaving NovaCompute openstack/test-pool"
	if err := s.DisableService(ctx, svc.ID, reason); err != nil {
		t.Fatal(err)
	}
	svcs, _ = s.ListComputeServices(ctx, host)
	if len(svcs) != 1 || svcs[0].Status != "disabled" || svcs[0].DisabledReason != reason {
		t.Errorf("after disabling: %+v", svcs)
	}

	// Aggregates: metadata, hosts, and a deleted service leaving them.
	agg := cl.Aggregate(unique("anvil-zone"), "")
	if err := s.SetAggregateMetadata(ctx, agg.ID, map[string]string{"anvil:managed-by": "test"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddAggregateHost(ctx, agg.ID, host); err != nil {
		t.Fatal(err)
	}
	aggregateHosts := func() []string {
		all, err := s.ListAggregates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range all {
			if a.ID == agg.ID {
				if a.Metadata["anvil:managed-by"] != "test" {
					t.Errorf("aggregate metadata = %v", a.Metadata)
				}
				return a.Hosts
			}
		}
		t.Fatal("the aggregate is gone")
		return nil
	}
	if hosts := aggregateHosts(); !slices.Contains(hosts, host) {
		t.Fatalf("aggregate hosts = %v", hosts)
	}
	if err := s.RemoveAggregateHost(ctx, agg.ID, host); err != nil {
		t.Fatal(err)
	}
	if hosts := aggregateHosts(); slices.Contains(hosts, host) {
		t.Fatalf("the host stayed in the aggregate: %v", hosts)
	}
	if err := s.AddAggregateHost(ctx, agg.ID, host); err != nil {
		t.Fatal(err)
	}

	// Placement: a custom trait set on the host's provider reads back.
	trait := "CUSTOM_ANVIL_" + strings.ToUpper(strings.ReplaceAll(unique("t"), "-", "_"))
	cl.Trait(trait)
	if err := s.EnsureTrait(ctx, trait); err != nil {
		t.Fatalf("EnsureTrait is not idempotent: %v", err)
	}
	if names, err := s.ListTraits(ctx, "CUSTOM_ANVIL_"); err != nil || !slices.Contains(names, trait) {
		t.Errorf("ListTraits = %v, %v", names, err)
	}
	rps, err := s.ListResourceProviders(ctx, host)
	if err != nil || len(rps) != 1 {
		t.Fatalf("providers of %s = %+v, %v", host, rps, err)
	}
	traits, gen, err := s.ProviderTraits(ctx, rps[0].UUID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetProviderTraits(ctx, rps[0].UUID, gen, append(traits, trait)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.ProviderTraits(ctx, rps[0].UUID); err != nil || !slices.Contains(got, trait) {
		t.Errorf("provider traits = %v, %v", got, err)
	}
	if err := s.SetProviderTraits(ctx, rps[0].UUID, gen, traits); !openstack.IsConflict(err) {
		t.Errorf("a stale generation: err = %v, want a conflict", err)
	}
	// A trait no provider has can be deleted; the cleanup of the one in use
	// takes it off the provider first.
	spare := trait + "_SPARE"
	if err := s.EnsureTrait(ctx, spare); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTrait(ctx, spare); err != nil {
		t.Fatalf("DeleteTrait: %v", err)
	}
	if names, err := s.ListTraits(ctx, spare); err != nil || slices.Contains(names, spare) {
		t.Errorf("after DeleteTrait, ListTraits = %v, %v", names, err)
	}

	// No server runs on the host.
	if n, err := s.CountServersOnHost(ctx, host); err != nil || n != 0 {
		t.Errorf("servers on %s = %d, %v", host, n, err)
	}

	// Deleting the service drops the host from its aggregates.
	cloud.StopCompute(t, host)
	if err := s.DeleteService(ctx, svc.ID); err != nil {
		t.Fatal(err)
	}
	if hosts := aggregateHosts(); slices.Contains(hosts, host) {
		t.Errorf("a deleted service's host stayed in the aggregate: %v", hosts)
	}
	if err := s.DeleteService(ctx, svc.ID); err != nil {
		t.Errorf("deleting a missing service: %v", err)
	}
}

// A server booted on one host counts for that host and not for another.
func TestIntegrationServersCountPerHost(t *testing.T) {
	_, s := requireCloud(t)
	ctx := t.Context()
	hostA, hostB := unique("anvil-hv-a"), unique("anvil-hv-b")
	for _, h := range []string{hostA, hostB} {
		cloud.StartCompute(t, h)
	}
	cloud.DiscoverHosts(t)
	for _, h := range []string{hostA, hostB} {
		svcs, err := s.ListComputeServices(ctx, h)
		if err != nil || len(svcs) != 1 {
			t.Fatalf("services of %s = %v, %v", h, svcs, err)
		}
		id := svcs[0].ID
		t.Cleanup(func() {
			cloud.StopCompute(t, h)
			_ = s.DeleteService(context.Background(), id)
		})
	}
	cloud.BootServer(t, unique("anvil-server"), hostA)
	if n, err := s.CountServersOnHost(ctx, hostA); err != nil || n != 1 {
		t.Errorf("servers on %s = %d, %v; want 1", hostA, n, err)
	}
	if n, err := s.CountServersOnHost(ctx, hostB); err != nil || n != 0 {
		t.Errorf("servers on %s = %d, %v; want 0", hostB, n, err)
	}
}
