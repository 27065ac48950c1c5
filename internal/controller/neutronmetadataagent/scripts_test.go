package neutronmetadataagent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runWaitForChassis runs wait-for-chassis.sh from the ConfigMap with stub
// ovs-vsctl and ovn-sbctl first on PATH; the stubs log their arguments.
func runWaitForChassis(t *testing.T, sb, systemID string, timeout time.Duration) (int, string, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	stubs := map[string]string{
		"ovs-vsctl": `echo "ovs-vsctl $*" >>` + log + `; echo '"` + systemID + `"'`,
		"ovn-sbctl": `echo "ovn-sbctl $*" >>` + log + `; echo '` + systemID + `'`,
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "wait-for-chassis.sh")
	if err := os.WriteFile(script, []byte(BuildScripts(testAgent("a", "")).Data["wait-for-chassis.sh"]), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	// The script's sleep outlives a killed bash; do not wait for it.
	cmd.WaitDelay = time.Second
	cmd.Env = []string{"PATH=" + dir + ":" + os.Getenv("PATH"), SBConnectionEnv + "=" + sb}
	out, err := cmd.CombinedOutput()
	calls, _ := os.ReadFile(log)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out), string(calls)
	case ctx.Err() != nil:
		return -1, string(out), string(calls)
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), string(out), string(calls)
	}
	t.Fatalf("running the script: %v\n%s", err, out)
	return 0, "", ""
}

func TestWaitForChassisScript(t *testing.T) {
	const id = "6d1f2a4e-3b5c-4d7e-8f90-a1b2c3d4e5f6"
	code, out, calls := runWaitForChassis(t, "ssl:10.0.0.2:6642", id, 10*time.Second)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"--db=unix:/run/openvswitch/db.sock", "external_ids:system-id", "--db=ssl:10.0.0.2:6642",
		"--no-leader-only", "--private-key=/etc/ovn/tls/tls.key", "find Chassis_Private name=" + id} {
		if !strings.Contains(calls, want) {
			t.Errorf("the calls lack %q:\n%s", want, calls)
		}
	}

	if code, out, calls := runWaitForChassis(t, "", id, 10*time.Second); code != 1 || calls != "" || !strings.Contains(out, "OVN_SB_CONNECTION is empty") {
		t.Errorf("with no address: exit %d, calls %q, output %q; want exit 1 before any call", code, calls, out)
	}
	// A system-id that is no UUID yet (the apply step has not run) is
	// waited for, and the Southbound is not asked.
	if code, out, calls := runWaitForChassis(t, "ssl:10.0.0.2:6642", "", 2*time.Second); code != -1 || strings.Contains(calls, "ovn-sbctl") {
		t.Errorf("without a system-id: exit %d, calls %q, output %q; want it still waiting", code, calls, out)
	}
}
