package podrunner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMaintenanceCommands(t *testing.T) {
	tests := []struct {
		name    string
		build   func(Container) (Command, error)
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Container, cmd Command)
	}{
		{
			name: "chassis-del dials the translated Southbound", build: buildChassisDel,
			env: map[string]string{"OVN_SB_DB": "ssl:10.96.0.9:6642", "SYSTEM_ID": "id-1"},
			check: func(t *testing.T, c Container, cmd Command) {
				tls := c.Mounts[1].HostPath
				want := []string{"--db=ssl:127.30.0.1:16642", "--timeout=60", "--private-key=" + filepath.Join(tls, "tls.key"),
					"--certificate=" + filepath.Join(tls, "tls.crt"), "--ca-cert=" + filepath.Join(tls, "ca.crt"), "--if-exists", "chassis-del", "id-1"}
				if cmd.Path != OVNSbctlPath || !slices.Equal(cmd.Args, want) {
					t.Errorf("command %s %q\nwant %q", cmd.Path, cmd.Args, want)
				}
			},
		},
		{
			name: "evacuate drops both kinds of rows from what holds them, in one transaction", build: buildEvacuate,
			env: map[string]string{"OVN_NB_DB": "ssl:127.0.0.1:30641", "SYSTEM_ID": "id-2"},
			check: func(t *testing.T, _ Container, cmd Command) {
				script := strings.Join(cmd.Args, " ")
				for _, want := range []string{"find Gateway_Chassis chassis_name='id-2'", "find HA_Chassis chassis_name='id-2'",
					"--db=ssl:127.0.0.1:30641", "remove Logical_Router_Port $port gateway_chassis $row",
					"remove HA_Chassis_Group $group ha_chassis $row"} {
					if !strings.Contains(script, want) {
						t.Errorf("script lacks %q:\n%s", want, script)
					}
				}
			},
		},
		{name: "no system-id", build: buildChassisDel, env: map[string]string{"OVN_SB_DB": "ssl:127.0.0.1:1"}, wantErr: "SYSTEM_ID"},
		{name: "no address", build: buildEvacuate, env: map[string]string{"SYSTEM_ID": "x"}, wantErr: "OVN_NB_DB is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ovnFixture(t, "ch-job-x", corev1.Container{Name: "chassis-del"}, tt.env)
			cmd, err := tt.build(c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c, cmd)
		})
	}
}

// TestInstallIdentityCommand runs the identity Job's stand-in: the three
// files land in the node's identity directory with the key private, and
// without the Secret's mount the build says what is missing.
func TestInstallIdentityCommand(t *testing.T) {
	c := ovnFixture(t, "ch-identity-x", corev1.Container{Name: "install-identity"}, nil)
	if _, err := buildInstallIdentity(c); err == nil || !strings.Contains(err.Error(), ovnIdentityDir) {
		t.Fatalf("without the identity mount: %v", err)
	}
	src := filepath.Join(t.TempDir(), "identity")
	c.Mounts = append(c.Mounts, Mount{MountPath: ovnIdentityDir, HostPath: src, Kind: VolumeSecret})
	dst := c.Mounts[1].HostPath
	for _, d := range []string{src, dst} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte(f+" content"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	cmd, err := buildInstallIdentity(c)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cmd.Path, cmd.Args...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for f, mode := range map[string]os.FileMode{"ca.crt": 0o644, "tls.crt": 0o644, "tls.key": 0o600} {
		got, err := os.ReadFile(filepath.Join(dst, f))
		st, _ := os.Stat(filepath.Join(dst, f))
		if err != nil || string(got) != f+" content" || st.Mode().Perm() != mode {
			t.Errorf("%s: %q (%v), mode %v, want its content and %o", f, got, err, st.Mode().Perm(), mode)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dst, ".*.new")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
