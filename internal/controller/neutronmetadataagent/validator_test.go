package neutronmetadataagent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

// validatorBinary is oslo.config's validator (Debian's python3-nova brings
// it; make deps installs it). With Debian's python3-neutron it loads
// Neutron's real option catalog, so it catches an option name the agent
// would silently ignore.
const validatorBinary = "/usr/bin/oslo-config-validator"

// agentNamespaces are the option catalogs the agent's file draws on:
// neutron ([DEFAULT] state_path), neutron.agent ([agent] root_helper),
// neutron.ml2 and neutron.ml2.ovn ([ovn]), neutron.ovn.metadata.agent (the
// metadata and [ovs] options), and the oslo libraries of
// [oslo_messaging_notifications] and [oslo_concurrency].
var agentNamespaces = []string{
	"neutron", "neutron.agent", "neutron.ml2", "neutron.ml2.ovn", "neutron.ovn.metadata.agent",
	"oslo.log", "oslo.messaging", "oslo.concurrency",
}

var (
	unknownOptionLine = regexp.MustCompile(`^ERROR:root:(\S+/\S+) is not part of the sample config$`)
	deprecatedLine    = regexp.MustCompile(`^WARNING:root:Deprecated opt (\S+/\S+) found$`)
	// An unknown namespace is only a warning of stevedore's; the validator
	// then checks against less and exits 0, which would prove nothing.
	missingNamespaceLine = regexp.MustCompile(`^WARNING:stevedore\.named:Could not load (\S+)$`)
)

// validate runs the validator over conf and returns the unknown and
// deprecated options it reported, and its exit code. It skips the test,
// saying why, where the validator or Neutron's catalogs are not installed.
func validate(t *testing.T, conf []byte) (unknown, deprecated []string, exit int, output string) {
	t.Helper()
	if _, err := os.Stat(validatorBinary); err != nil {
		t.Skip("oslo-config-validator is not installed (make deps installs it with Debian's python3-nova)")
	}
	path := filepath.Join(t.TempDir(), ConfigKey)
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--input-file", path}
	for _, ns := range agentNamespaces {
		args = append(args, "--namespace", ns)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, validatorBinary, args...).CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		exit = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v\n%s", validatorBinary, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if m := missingNamespaceLine.FindStringSubmatch(line); m != nil {
			t.Skipf("Neutron's option catalog %s is not registered as an oslo.config.opts entry point "+
				"(install Debian's python3-neutron, as hack/openstack/openstack.sh install does); the check would prove nothing", m[1])
		}
		if m := unknownOptionLine.FindStringSubmatch(line); m != nil {
			unknown = append(unknown, m[1])
		}
		if m := deprecatedLine.FindStringSubmatch(line); m != nil {
			deprecated = append(deprecated, m[1])
		}
	}
	return unknown, deprecated, exit, string(out)
}

// Every file the agent can be given passes the real validator against
// Neutron's catalogs: no unknown and no deprecated option.
func TestIntegrationOsloConfigValidatorAcceptsAgentINI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo-config-validator")
	}
	withHost := testAgent("a", "")
	withHost.Spec.NovaMetadata.Host = "10.0.0.7"
	for name, agent := range map[string]func() []byte{
		"http":          func() []byte { return mustRender(t, testAgent("a", "")) },
		"http and host": func() []byte { return mustRender(t, withHost) },
		"https and CA":  func() []byte { return mustRender(t, withHTTPS(testAgent("a", "compute-a"))) },
		// The shared secret is set only through the environment; this
		// proves the variable's name maps onto an option the agent has.
		"the environment's option": func() []byte {
			return append(mustRender(t, testAgent("a", "")), "\n[DEFAULT]\nmetadata_proxy_shared_secret = x\n"...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			unknown, deprecated, exit, out := validate(t, agent())
			if len(unknown) > 0 || len(deprecated) > 0 || exit != 0 {
				t.Errorf("unknown %v, deprecated %v, exit %d:\n%s", unknown, deprecated, exit, out)
			}
		})
	}
}

// The check above must be able to fail: a made-up option in each section
// the agent writes is reported.
func TestIntegrationOsloConfigValidatorCatchesUnknownAgentOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo-config-validator")
	}
	conf := "[DEFAULT]\nnova_metadata_hots = x\n\n[ovn]\novn_sb_connexion = y\n"
	unknown, _, exit, out := validate(t, []byte(conf))
	if strings.Join(unknown, ",") != "DEFAULT/nova_metadata_hots,ovn/ovn_sb_connexion" || exit != 1 {
		t.Errorf("unknown %v, exit %d:\n%s", unknown, exit, out)
	}
}

// mustRender renders an agent's file against the test's Southbound.
func mustRender(t *testing.T, a *neutronv1alpha1.NeutronMetadataAgent) []byte {
	t.Helper()
	ini, err := RenderAgentINI(a, testSB)
	if err != nil {
		t.Fatal(err)
	}
	return ini
}
