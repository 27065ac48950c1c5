// Package openstacktest gives integration tests real Keystone, Placement
// and Nova: the services hack/openstack/openstack.sh runs on 127.0.0.1 from
// Debian packages. A package starts them once in TestMain (starting is a
// no-op when they already run), and each test creates what it needs through
// the Cloud, which deletes it again when the test ends.
package openstacktest

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/openstack"
)

// Cloud is a running set of services and the admin credentials for it.
type Cloud struct {
	// Endpoints are the addresses from endpoints.env; they hold no secret.
	Endpoints map[string]string
	local     *localcloud.Cloud
	admin     openstack.Credentials

	mu       sync.Mutex
	computes map[string]func()
}

// Local returns the state directory's view of the set, with its service
// and database passwords.
func (c *Cloud) Local() *localcloud.Cloud { return c.local }

// Start installs the services if needed, starts them unless they run, and
// returns the Cloud with a release function to call when the package's tests
// are done. It shells out to the project's own script, so tests and the
// devstack run exactly the same services.
//
// Several test packages may share one set at the same time. The set is
// stopped by the last of them to release it, and only when a test started
// it: a running set, such as a developer's, is reused and left running.
func Start(ctx context.Context) (*Cloud, func(), error) {
	return start(ctx, false)
}

// StartWithNova is Start plus the reference Nova control plane (`openstack.sh
// start-nova`), for the tests of pieces that join a Nova rather than run
// one. It is never used with a devstack's Nova, which Anvil runs.
func StartWithNova(ctx context.Context) (*Cloud, func(), error) {
	return start(ctx, true)
}

func start(ctx context.Context, nova bool) (*Cloud, func(), error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	state := cmp.Or(os.Getenv("ANVIL_OPENSTACK_DIR"), filepath.Join(root, ".devstack", "openstack"))
	script := filepath.Join(root, "hack", "openstack", "openstack.sh")
	run := func(ctx context.Context, sub string) (string, error) {
		cmd := exec.CommandContext(ctx, script, sub)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	l, err := newLeases(state)
	if err != nil {
		return nil, nil, err
	}
	err = l.locked(func() error {
		status, _ := run(ctx, "status")
		startedHere := !allRunning(status)
		subs := []string{"install", "start"}
		if nova {
			subs = append(subs, "start-nova")
		}
		for _, sub := range subs {
			if out, err := run(ctx, sub); err != nil {
				return fmt.Errorf("openstack.sh %s: %w\n%s", sub, err, tail(out, 30))
			}
		}
		return l.take(startedHere)
	})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			err := l.locked(func() error {
				last, err := l.release()
				if err != nil || !last {
					return err
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if out, err := run(ctx, "stop"); err != nil {
					return fmt.Errorf("openstack.sh stop: %w\n%s", err, tail(out, 10))
				}
				return nil
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		})
	}
	cloud, err := Load(state)
	if err != nil {
		release()
		return nil, nil, err
	}
	return cloud, release, nil
}

// allRunning tells whether `openstack.sh status` reports every service
// running.
func allRunning(status string) bool {
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		lines++
		if fields[1] != "running" {
			return false
		}
	}
	return lines > 0
}

// Load reads a running set's state directory.
func Load(stateDir string) (*Cloud, error) {
	local, err := localcloud.Load(stateDir)
	if err != nil {
		return nil, err
	}
	return &Cloud{Endpoints: local.Endpoints, local: local, admin: local.Admin}, nil
}

// KeystoneHosts are the --allowed-keystone-hosts entries that admit the
// set's Keystone as a ControlPlane declares it: the internal URL, plain
// http and so written http://, and the public one.
func (c *Cloud) KeystoneHosts(tb testing.TB) []string {
	tb.Helper()
	hosts, err := keystonepolicy.EntriesFor(c.Endpoints[localcloud.KeystoneURL], c.Endpoints[localcloud.KeystonePublicURL])
	if err != nil {
		tb.Fatal(err)
	}
	return hosts
}

// AdminCredentials returns the cloud admin's credentials.
func (c *Cloud) AdminCredentials() openstack.Credentials { return c.admin }

// Session authenticates as the cloud admin.
func (c *Cloud) Session(ctx context.Context) (*openstack.Session, error) {
	return openstack.NewSession(ctx, c.admin)
}

// TransportURL returns the bus URL: the plain listener, or the TLS one.
func (c *Cloud) TransportURL(tls bool) (string, error) { return c.local.TransportURL(tls) }

// Cleanup deletes what a test created when it ends, in reverse order, and
// reports failures without failing the test that already ran.
type Cleanup struct {
	tb      testing.TB
	session *openstack.Session
}

// ForTest returns a Cleanup bound to tb and an admin session.
func (c *Cloud) ForTest(tb testing.TB) (*Cleanup, *openstack.Session) {
	tb.Helper()
	s, err := c.Session(tb.Context())
	if err != nil {
		tb.Fatalf("authenticating as the cloud admin: %v", err)
	}
	return &Cleanup{tb: tb, session: s}, s
}

func (cl *Cleanup) add(what string, f func(context.Context) error) {
	cl.tb.Cleanup(func() {
		if err := f(context.Background()); err != nil && !openstack.IsNotFound(err) {
			cl.tb.Logf("cleanup of %s: %v", what, err)
		}
	})
}

// Project creates a project in the Default domain and deletes it later.
func (cl *Cleanup) Project(name string) string {
	cl.tb.Helper()
	id, err := cl.session.EnsureProject(cl.tb.Context(), name, "default")
	if err != nil {
		cl.tb.Fatal(err)
	}
	cl.add("project "+name, func(ctx context.Context) error { return cl.session.DeleteProject(ctx, id) })
	return id
}

// User creates a user in the Default domain and deletes it later.
func (cl *Cleanup) User(name, password string) string {
	cl.tb.Helper()
	id, err := cl.session.EnsureUser(cl.tb.Context(), name, "default", password)
	if err != nil {
		cl.tb.Fatal(err)
	}
	cl.add("user "+name, func(ctx context.Context) error { return cl.session.DeleteUser(ctx, id) })
	return id
}

// ServiceUser creates a user in the Default domain holding what the set's
// nova service user holds, admin and service on project service, so a
// service can run as it; the user is deleted later, with its grants.
func (cl *Cleanup) ServiceUser(name, password string) string {
	cl.tb.Helper()
	id := cl.User(name, password)
	ctx := cl.tb.Context()
	project, err := cl.session.FindProject(ctx, "service", "default")
	if err != nil || project == "" {
		cl.tb.Fatalf("finding project service: %v", err)
	}
	for _, role := range []string{"admin", "service"} {
		roleID, err := cl.session.FindRole(ctx, role)
		if err != nil || roleID == "" {
			cl.tb.Fatalf("finding role %s: %v", role, err)
		}
		if err := cl.session.AssignRole(ctx, roleID, id, project); err != nil {
			cl.tb.Fatalf("granting %s to user %s: %v", role, name, err)
		}
	}
	return id
}

// Aggregate creates an aggregate, and later removes its hosts and deletes it.
func (cl *Cleanup) Aggregate(name, zone string) openstack.Aggregate {
	cl.tb.Helper()
	a, err := cl.session.CreateAggregate(cl.tb.Context(), name, zone)
	if err != nil {
		cl.tb.Fatal(err)
	}
	cl.add("aggregate "+name, func(ctx context.Context) error {
		all, err := cl.session.ListAggregates(ctx)
		if err != nil {
			return err
		}
		for _, x := range all {
			if x.ID == a.ID {
				for _, h := range x.Hosts {
					_ = cl.session.RemoveAggregateHost(ctx, a.ID, h)
				}
			}
		}
		return cl.session.DeleteAggregate(ctx, a.ID)
	})
	return a
}

// Trait creates a custom trait, and later takes it off every resource
// provider that has it and deletes it; Placement refuses to delete a trait in
// use.
func (cl *Cleanup) Trait(name string) {
	cl.tb.Helper()
	if err := cl.session.EnsureTrait(cl.tb.Context(), name); err != nil {
		cl.tb.Fatal(err)
	}
	cl.add("trait "+name, func(ctx context.Context) error {
		rps, err := cl.session.ListResourceProviders(ctx, "")
		if err != nil {
			return err
		}
		for _, rp := range rps {
			have, gen, err := cl.session.ProviderTraits(ctx, rp.UUID)
			if err != nil || !slices.Contains(have, name) {
				continue
			}
			_ = cl.session.SetProviderTraits(ctx, rp.UUID, gen, slices.DeleteFunc(have, func(t string) bool { return t == name }))
		}
		return cl.session.DeleteTrait(ctx, name)
	})
}

// ComputeService deletes the compute service of host when the test ends,
// after its process has stopped, so that a later run starts clean.
func (cl *Cleanup) ComputeService(host string) {
	cl.add("compute service "+host, func(ctx context.Context) error {
		svcs, err := cl.session.ListComputeServices(ctx, host)
		if err != nil {
			return err
		}
		for _, svc := range svcs {
			if err := cl.session.DeleteService(ctx, svc.ID); err != nil && !openstack.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Run is for a package's TestMain: it starts or reuses the services, sets
// *cloud, runs next (m.Run, or a harness that calls it) and releases the
// services. Under -short it starts nothing and leaves *cloud nil, so that
// the integration tests skip.
func Run(cloud **Cloud, next func() int) int {
	return run(cloud, next, Start)
}

// RunWithNova is Run with the reference Nova control plane; see
// StartWithNova.
func RunWithNova(cloud **Cloud, next func() int) int {
	return run(cloud, next, StartWithNova)
}

func run(cloud **Cloud, next func() int, startSet func(context.Context) (*Cloud, func(), error)) int {
	flag.Parse()
	if testing.Short() {
		return next()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	c, release, err := startSet(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "openstacktest:", err)
		return 1
	}
	defer release()
	*cloud = c
	return next()
}

// Require skips the test when no services run, which is the case under
// -short.
func Require(tb testing.TB, cloud *Cloud) *Cloud {
	tb.Helper()
	if cloud == nil {
		tb.Skip("integration test: needs the OpenStack services (run without -short)")
	}
	return cloud
}
