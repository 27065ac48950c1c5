package podrunner

import (
	"reflect"
	"testing"
)

// testMounts nest a Secret inside a ConfigMap mount and add a file mount
// and a root mount, the cases where the longest-match rule matters.
var testMounts = Mounts{
	{MountPath: "/etc/nova", HostPath: "/s/etc-nova", Kind: VolumeConfigMap, Files: []string{"nova.conf", "policy.yaml"}},
	{MountPath: "/etc/nova/compute-config/", HostPath: "/s/secret", Kind: VolumeSecret, Files: []string{"ca.crt", "nova-compute.conf"}},
	{MountPath: "/var/lib/nova", HostPath: "/s/host/var/lib/nova", Kind: VolumeHostPath},
	{MountPath: "/etc/nova/extra.conf", HostPath: "/s/cm/extra.conf", Kind: VolumeConfigMap},
	{MountPath: "/", HostPath: "/s/root", Kind: VolumeEmptyDir},
}

func TestMountsPath(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"/etc/nova/nova.conf", "/s/etc-nova/nova.conf", true},
		{"/etc/nova", "/s/etc-nova", true},
		{"/etc/nova/compute-config/ca.crt", "/s/secret/ca.crt", true},
		{"/etc/nova/compute-config", "/s/secret", true},
		{"/etc/nova/./compute-config//ca.crt", "/s/secret/ca.crt", true},
		{"/etc/nova/extra.conf", "/s/cm/extra.conf", true},
		{"/var/lib/nova/instances", "/s/host/var/lib/nova/instances", true},
		{"/etc/novalis", "", false},
		{"/etc", "", false},
		{"relative/etc/nova", "", false},
		// The root mount never applies: it would capture every path.
		{"/usr/bin/python3", "", false},
	}
	for _, tt := range tests {
		got, ok := testMounts.Path(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Path(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestMountsTranslate covers paths inside arguments and scripts: a mount
// path counts only where it starts and ends a path element.
func TestMountsTranslate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"--config-file=/etc/nova/nova.conf", "--config-file=/s/etc-nova/nova.conf"},
		{"/etc/nova/compute-config/nova-compute.conf", "/s/secret/nova-compute.conf"},
		{"cat /etc/nova/compute-config/password > out; ls /var/lib/nova", "cat /s/secret/password > out; ls /s/host/var/lib/nova"},
		{`echo "/etc/nova/policy.yaml"`, `echo "/s/etc-nova/policy.yaml"`},
		{"a:/etc/nova,b", "a:/s/etc-nova,b"},
		{"/etc/novalis /x/etc/nova ./etc/nova", "/etc/novalis /x/etc/nova ./etc/nova"},
		{"https://host/etc/nova", "https://host/etc/nova"},
		{"no paths here", "no paths here"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := testMounts.Translate(tt.in); got != tt.want {
			t.Errorf("Translate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMountsConfigFiles(t *testing.T) {
	want := []string{"/s/etc-nova/nova.conf", "/s/secret/nova-compute.conf", "/s/cm/extra.conf"}
	if got := testMounts.ConfigFiles(); !reflect.DeepEqual(got, want) {
		t.Errorf("ConfigFiles = %q, want %q", got, want)
	}
}
