package podrunner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNovaPreflightMapping(t *testing.T) {
	m := NovaPreflightMapping()
	pre := func(name, image string, cmd ...string) *corev1.Container {
		return &corev1.Container{Name: name, Image: image, Command: cmd}
	}
	mounts := Mounts{{MountPath: "/etc/nova/compute-config", HostPath: "/work/pod/compute-config"}}
	tests := []struct {
		name    string
		c       *corev1.Container
		match   bool
		want    []string
		wantErr bool
	}{
		{"the pool's check", pre("preflight", "ghcr.io/c5c3/nova:2026.1", "python3", "-c", "print(1)", "/etc/nova/compute-config"),
			true, []string{"-c", "print(1)", "/work/pod/compute-config"}, false},
		{"another image", pre("preflight", "ghcr.io/c5c3/neutron:2026.1", "python3", "-c", "x", "/etc/nova/compute-config"), false, nil, false},
		{"another container", pre("wait-for-chassis", "ghcr.io/c5c3/nova:2026.1", "python3", "-c", "x"), false, nil, false},
		{"a directory no mount holds", pre("preflight", "ghcr.io/c5c3/nova:2026.1", "python3", "-c", "x", "/etc/other"), true, nil, true},
		{"another command line", pre("preflight", "ghcr.io/c5c3/nova:2026.1", "sh", "-c", "x"), true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.Match(tt.c); got != tt.match {
				t.Fatalf("Match = %v, want %v", got, tt.match)
			}
			if !tt.match {
				return
			}
			cmd, err := m.Build(Container{Spec: tt.c, Mounts: mounts})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Build error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (cmd.Path != PythonPath || !slices.Equal(cmd.Args, tt.want)) {
				t.Errorf("Build = %s %v, want %s %v", cmd.Path, cmd.Args, PythonPath, tt.want)
			}
		})
	}
}
