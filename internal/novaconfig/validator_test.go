package novaconfig

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// validatorBinary is oslo.config's validator from Debian's python3-nova
// (OpenStack Zed). It loads Nova's real option catalog, so it catches an
// option name Nova would silently ignore.
const validatorBinary = "/usr/bin/oslo-config-validator"

// validatorNamespaces are the option catalogs a nova-compute loads; nova.conf
// also pulls in castellan, which covers [key_manager] and [barbican].
var validatorNamespaces = []string{
	"nova.conf", "oslo.log", "oslo.messaging", "keystonemiddleware.auth_token", "oslo.concurrency",
}

// controlPlaneNamespaces add oslo.cache for [cache]. Nova's catalog lists
// it today, but naming the library that owns the options keeps the check
// from depending on that. [api_database] and [database] are nova.conf's.
var controlPlaneNamespaces = append(slices.Clone(validatorNamespaces), "oslo.cache")

// newerThanValidator lists options the contract needs but the local
// validator does not know, because Debian's Zed oslo.messaging (14.0) is
// older than they are. Both were added to oslo.messaging in the 2024.1
// cycle, and every release the contract targets has them. Nothing else may
// be added here: an unknown option is otherwise a bug in the contract.
// TestIntegrationOsloConfigValidatorAllowlistIsCurrent fails once the
// validator learns them, so the list cannot outlive its reason.
var newerThanValidator = map[string]bool{
	"oslo_messaging_rabbit/rabbit_transient_quorum_queue": true,
	"oslo_messaging_rabbit/use_queue_manager":             true,
}

var (
	unknownOptionLine = regexp.MustCompile(`^ERROR:root:(\S+/\S+) is not part of the sample config$`)
	deprecatedLine    = regexp.MustCompile(`^WARNING:root:Deprecated opt (\S+/\S+) found$`)
	// The validator skips keystone_authtoken on purpose: its options depend
	// on auth_type and are not all in the sample data. It logs each one.
	skippedAuthTokenLine = regexp.MustCompile(`^INFO:root:Ignoring missing option "([^"]+)" from group "keystone_authtoken" `)
)

// passwordPluginOptions are the options keystoneauth's password plugin
// reads. The validator cannot check keystone_authtoken, so the test checks
// the options it skipped against this list instead; a typo there would
// otherwise pass unnoticed.
var passwordPluginOptions = map[string]bool{
	"auth_url": true, "username": true, "user_id": true, "password": true,
	"user_domain_name": true, "user_domain_id": true,
	"project_name": true, "project_id": true, "project_domain_name": true, "project_domain_id": true,
	"domain_name": true, "domain_id": true, "trust_id": true, "system_scope": true,
	"default_domain_name": true, "default_domain_id": true,
}

// validatorResult is what one run reported, sorted into what the test
// cares about.
type validatorResult struct {
	exitCode   int
	unknown    []string // section/option the catalog does not have
	deprecated []string // section/option the catalog marks deprecated
	skipped    []string // keystone_authtoken options left unchecked
	output     string
}

func runValidator(t *testing.T, path string, namespaces []string) validatorResult {
	t.Helper()
	if _, err := os.Stat(validatorBinary); err != nil {
		t.Fatal("oslo-config-validator not found; run `make deps` (installs Debian python3-nova)")
	}
	args := make([]string, 0, 2*len(namespaces)+2)
	for _, ns := range namespaces {
		args = append(args, "--namespace", ns)
	}
	args = append(args, "--input-file", path)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, validatorBinary, args...).CombinedOutput()
	res := validatorResult{output: string(out)}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v\n%s", validatorBinary, err, out)
	}
	for _, line := range strings.Split(res.output, "\n") {
		if m := unknownOptionLine.FindStringSubmatch(line); m != nil {
			res.unknown = append(res.unknown, m[1])
		}
		if m := deprecatedLine.FindStringSubmatch(line); m != nil {
			res.deprecated = append(res.deprecated, m[1])
		}
		if m := skippedAuthTokenLine.FindStringSubmatch(line); m != nil {
			res.skipped = append(res.skipped, m[1])
		}
	}
	return res
}

func TestIntegrationOsloConfigValidatorAcceptsGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo-config-validator")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files under testdata")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			checkAccepted(t, runValidator(t, path, validatorNamespaces))
		})
	}
}

// TestIntegrationOsloConfigValidatorAcceptsControlPlaneGoldens runs the
// same check over the control plane's nova.conf goldens, with the catalogs
// the control plane's services load.
func TestIntegrationOsloConfigValidatorAcceptsControlPlaneGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo-config-validator")
	}
	files, err := filepath.Glob(filepath.Join(controlPlaneGoldenDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files under " + controlPlaneGoldenDir)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			checkAccepted(t, runValidator(t, path, controlPlaneNamespaces))
		})
	}
}

// checkAccepted fails on every unknown option outside newerThanValidator,
// every deprecated name and every keystone_authtoken option the password
// plugin does not read.
func checkAccepted(t *testing.T, res validatorResult) {
	t.Helper()
	tolerated := 0
	for _, opt := range res.unknown {
		if newerThanValidator[opt] {
			tolerated++
			continue
		}
		t.Errorf("%s is not part of Nova's option catalog", opt)
	}
	// A deprecated name works today but is dropped in a later release; the
	// file should use the current one.
	for _, opt := range res.deprecated {
		t.Errorf("%s is deprecated", opt)
	}
	for _, opt := range res.skipped {
		if !passwordPluginOptions[opt] {
			t.Errorf("keystone_authtoken/%s is not an option of the password auth plugin", opt)
		}
	}
	// Exit 1 is explained only by the tolerated lines; any other failure,
	// such as a traceback, is reported with the output.
	if res.exitCode != 0 && (tolerated == 0 || res.exitCode != 1) {
		t.Errorf("validator exited %d with no tolerated cause:\n%s", res.exitCode, res.output)
	}
	if t.Failed() {
		t.Logf("validator output:\n%s", res.output)
	}
}

// TestIntegrationOsloConfigValidatorAllowlistIsCurrent proves every
// allowlisted option is still unknown to the local validator. When Debian's
// validator learns one, this fails and the entry must be removed, so the
// allowlist never hides a real mistake.
func TestIntegrationOsloConfigValidatorAllowlistIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo-config-validator")
	}
	var conf strings.Builder
	for opt := range newerThanValidator {
		section, key, _ := strings.Cut(opt, "/")
		conf.WriteString("[" + section + "]\n" + key + " = true\n\n")
	}
	path := filepath.Join(t.TempDir(), "allowlist.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runValidator(t, path, validatorNamespaces)
	reported := map[string]bool{}
	for _, opt := range res.unknown {
		reported[opt] = true
	}
	for opt := range newerThanValidator {
		if !reported[opt] {
			t.Errorf("the validator now knows %s: remove it from newerThanValidator", opt)
		}
	}
	if res.exitCode != 1 {
		t.Errorf("validator exited %d, want 1 for unknown options:\n%s", res.exitCode, res.output)
	}
}

// TestIntegrationOsloConfigValidatorCatchesUnknownOptions guards the test
// above against a validator that reports nothing: a made-up option must be
// found, or an empty result would prove nothing.
func TestIntegrationOsloConfigValidatorCatchesUnknownOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo-config-validator")
	}
	path := filepath.Join(t.TempDir(), "bogus.conf")
	conf := "[DEFAULT]\ndebug = true\n\n[service_user]\nregion_name = RegionOne\n\n[vnc]\nnot_an_option = 1\n\n" +
		"[keystone_authtoken]\nauth_uri = http://old\nusernme = nova\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runValidator(t, path, validatorNamespaces)
	want := map[string]bool{"service_user/region_name": true, "vnc/not_an_option": true}
	for _, opt := range res.unknown {
		delete(want, opt)
	}
	if len(want) != 0 || res.exitCode != 1 {
		t.Errorf("validator missed %v (exit %d):\n%s", want, res.exitCode, res.output)
	}
	// The other two kinds of line the golden test reads must still parse.
	if !slices.Equal(res.deprecated, []string{"keystone_authtoken/auth_uri"}) {
		t.Errorf("deprecated = %v, want keystone_authtoken/auth_uri:\n%s", res.deprecated, res.output)
	}
	if !slices.Equal(res.skipped, []string{"usernme"}) {
		t.Errorf("skipped = %v, want usernme:\n%s", res.skipped, res.output)
	}
}
