package devstack

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// openStackState records whether this stack started the service set, so
// that Down stops only what Up started.
type openStackState struct {
	// Started is true once an Up of this stack had to start the services.
	Started bool `json:"started"`
	// NeutronRepointed is true once an Up pointed neutron-server at the
	// stack's OVN central, which Down removes: Down then points it back
	// at the service set's own, so that the set keeps working.
	NeutronRepointed bool `json:"neutronRepointed,omitempty"`
}

// OpenStackDir is where the service set keeps its state: the directory
// ANVIL_OPENSTACK_DIR names, else <root>/.devstack/openstack. It is the
// same set `make openstack-up` and the integration tests use, so one machine
// runs one set on its fixed ports whatever the devstack's --state-dir.
func (s *Stack) OpenStackDir() string {
	return cmp.Or(os.Getenv("ANVIL_OPENSTACK_DIR"), filepath.Join(s.root, ".devstack", "openstack"))
}

// openstackScript runs hack/openstack/openstack.sh with a subcommand and
// its arguments, its output nested under the current step.
func (s *Stack) openstackScript(ctx context.Context, sub string, quiet bool, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.root, "hack", "openstack", "openstack.sh"), append([]string{sub}, args...)...)
	cmd.Env = append(os.Environ(), "ANVIL_OPENSTACK_DIR="+s.OpenStackDir())
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if !quiet {
		cmd.Stdout, cmd.Stderr = indent(s.out), indent(s.out)
	}
	err := cmd.Run()
	return buf.String(), err
}

// startOpenStack installs the Debian packages if needed and starts the
// service set, or reuses a running one. The devstack's Nova is Anvil's, so
// a reference Nova the tests started (openstack.sh start-nova) is stopped
// first: its processes would answer on the same bus and database, and its
// catalog entry would stand where the ControlPlane registers its own.
func (s *Stack) startOpenStack(ctx context.Context, st *state) (string, error) {
	status, _ := s.openstackScript(ctx, "status", true)
	running, total := countRunning(status)
	detail := fmt.Sprintf("already running (%d services), state in %s", total, s.OpenStackDir())
	if total > 0 && running == total {
		if st.OpenStack == nil {
			st.OpenStack = &openStackState{}
		}
	} else {
		for _, sub := range []string{"install", "start"} {
			if _, err := s.openstackScript(ctx, sub, false); err != nil {
				return "", fmt.Errorf("hack/openstack/openstack.sh %s: %w", sub, err)
			}
		}
		st.OpenStack = &openStackState{Started: true}
		detail = "clouds.yaml in " + s.OpenStackDir()
	}
	// Keystone runs now, so the reference Nova's catalog entry can go too.
	if out, err := s.openstackScript(ctx, "stop-nova", true); err != nil {
		return "", fmt.Errorf("hack/openstack/openstack.sh stop-nova: %w\n%s", err, out)
	}
	return detail, nil
}

// stopOpenStack stops the service set if this stack started it. Its data
// stay, so the next Up starts it warm. A set left running for others gets
// its neutron-server pointed back at its own OVN central, since the
// stack's central, which Up pointed it at, is about to go.
func (s *Stack) stopOpenStack(ctx context.Context, st *state) error {
	switch {
	case st.OpenStack == nil:
		return nil
	case st.OpenStack.Started:
		fmt.Fprintln(s.out, "Stopping the OpenStack services")
		if _, err := s.openstackScript(ctx, "stop", false); err != nil {
			return fmt.Errorf("hack/openstack/openstack.sh stop: %w", err)
		}
	case st.OpenStack.NeutronRepointed:
		fmt.Fprintln(s.out, "Pointing neutron-server back at the service set's own OVN central")
		if out, err := s.openstackScript(ctx, "start-neutron", false); err != nil {
			return fmt.Errorf("hack/openstack/openstack.sh start-neutron: %w\n%s", err, out)
		}
	}
	return nil
}

// openStackStatus renders "<state>\t<detail>" for the service set.
func (s *Stack) openStackStatus(ctx context.Context) string {
	status, _ := s.openstackScript(ctx, "status", true)
	running, total := countRunning(status)
	switch {
	case total == 0:
		return "unknown\thack/openstack/openstack.sh status printed nothing"
	case running == total:
		return fmt.Sprintf("running\t%d services; OS_CLIENT_CONFIG_FILE=%s", total, filepath.Join(s.OpenStackDir(), "clouds.yaml"))
	default:
		return fmt.Sprintf("degraded\t%d of %d services run; see %s", running, total, filepath.Join(s.OpenStackDir(), "logs"))
	}
}

// countRunning reads `openstack.sh status`: one "<service> <state> ..."
// line per service.
func countRunning(status string) (running, total int) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		total++
		if fields[1] == "running" {
			running++
		}
	}
	return running, total
}
