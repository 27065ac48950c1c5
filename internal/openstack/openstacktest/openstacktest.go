// Package openstacktest gives integration tests real Keystone, Placement
// and Nova: the services hack/openstack/openstack.sh runs on 127.0.0.1 from
// Debian packages. A package starts them once in TestMain (starting is a
// no-op when they already run), and each test creates what it needs through
// the Cloud, which deletes it again when the test ends.
package openstacktest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/anvil/anvil/internal/openstack"
	"github.com/anvil/anvil/internal/testenv"
)

// Cloud is a running set of services and the admin credentials for it.
type Cloud struct {
	// Endpoints are the addresses from endpoints.env; they hold no secret.
	Endpoints map[string]string
	admin     openstack.Credentials
	stateDir  string

	mu       sync.Mutex
	computes map[string]func()
}

// Start installs the services if needed, starts them unless they run, and
// returns the Cloud with a stop function. Stop stops the services only if
// this call started them: a running set, such as a developer's, is reused
// and left running. It shells out to the project's own script, so tests and
// the devstack run exactly the same services.
func Start(ctx context.Context) (*Cloud, func(), error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	script := filepath.Join(root, "hack", "openstack", "openstack.sh")
	run := func(ctx context.Context, sub string) (string, error) {
		cmd := exec.CommandContext(ctx, script, sub)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	status, _ := run(ctx, "status")
	reused := allRunning(status)
	for _, sub := range []string{"install", "start"} {
		if out, err := run(ctx, sub); err != nil {
			return nil, nil, fmt.Errorf("openstack.sh %s: %w\n%s", sub, err, tail(out, 30))
		}
	}
	stop := func() {}
	if !reused {
		stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if out, err := run(ctx, "stop"); err != nil {
				fmt.Fprintf(os.Stderr, "openstack.sh stop: %v\n%s\n", err, tail(out, 10))
			}
		}
	}
	state := os.Getenv("ANVIL_OPENSTACK_DIR")
	if state == "" {
		state = filepath.Join(root, ".devstack", "openstack")
	}
	cloud, err := Load(state)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return cloud, stop, nil
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
	env, err := readEnvFile(filepath.Join(stateDir, "endpoints.env"))
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(stateDir, "clouds.yaml"))
	if err != nil {
		return nil, err
	}
	var clouds struct {
		Clouds map[string]struct {
			Auth struct {
				AuthURL           string `json:"auth_url"`
				Username          string `json:"username"`
				Password          string `json:"password"`
				ProjectName       string `json:"project_name"`
				UserDomainName    string `json:"user_domain_name"`
				ProjectDomainName string `json:"project_domain_name"`
			} `json:"auth"`
			Region    string `json:"region_name"`
			Interface string `json:"interface"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal(raw, &clouds); err != nil {
		return nil, errors.New("clouds.yaml does not parse")
	}
	a, ok := clouds.Clouds["anvil"]
	if !ok {
		return nil, errors.New("clouds.yaml has no cloud named anvil")
	}
	return &Cloud{Endpoints: env, stateDir: stateDir, admin: openstack.Credentials{
		AuthURL: a.Auth.AuthURL, Username: a.Auth.Username, Password: a.Auth.Password,
		ProjectName: a.Auth.ProjectName, UserDomainName: a.Auth.UserDomainName, ProjectDomainName: a.Auth.ProjectDomainName,
		Region: a.Region, Interface: a.Interface,
	}}, nil
}

// AdminCredentials returns the cloud admin's credentials.
func (c *Cloud) AdminCredentials() openstack.Credentials { return c.admin }

// Session authenticates as the cloud admin.
func (c *Cloud) Session(ctx context.Context) (*openstack.Session, error) {
	return openstack.NewSession(ctx, c.admin)
}

// TransportURL returns the bus URL: the plain listener, or the TLS one.
func (c *Cloud) TransportURL(tls bool) (string, error) {
	key := "ANVIL_OPENSTACK_TRANSPORT_URL_FILE"
	if tls {
		key = "ANVIL_OPENSTACK_TRANSPORT_URL_TLS_FILE"
	}
	raw, err := os.ReadFile(c.Endpoints[key])
	return strings.TrimSpace(string(raw)), err
}

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

func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s (are the services started? hack/openstack/openstack.sh start): %w", path, err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
