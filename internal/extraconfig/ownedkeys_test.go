package extraconfig

import (
	"slices"
	"strings"
	"testing"
)

// The rejected set is API: the admission webhook refuses exactly these, so
// the list is spelled out here instead of being derived from the table.
func TestRejectedKeysAreTheSpecifiedOnes(t *testing.T) {
	want := []string{
		"DEFAULT.host", "DEFAULT.my_ip", "DEFAULT.transport_url", "DEFAULT.state_path",
		"oslo_concurrency.lock_path",
		"libvirt.connection_uri", "libvirt.live_migration_scheme", "libvirt.live_migration_with_native_tls",
		"libvirt.live_migration_uri", "libvirt.live_migration_tunnelled", "libvirt.live_migration_inbound_addr",
		"os_vif_ovs.ovsdb_connection",
		"vnc.server_proxyclient_address",
		"keystone_authtoken.password", "service_user.password", "placement.password", "neutron.password", "cinder.password",
		"keystone_authtoken.www_authenticate_uri", "oslo_messaging_rabbit.ssl", "oslo_messaging_rabbit.ssl_ca_file",
	}
	for _, s := range []string{"keystone_authtoken", "service_user", "placement", "neutron", "cinder", "glance", "barbican"} {
		want = append(want, s+".auth_url", s+".endpoint_override")
	}
	var got []string
	for _, k := range RejectedKeys {
		got = append(got, k.Name())
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("RejectedKeys = %v, want %v", got, want)
	}
}

// Every owned key explains itself, and no key is both rejected and reported.
func TestOwnedKeyTablesAreComplete(t *testing.T) {
	for _, table := range [][]OwnedKey{RejectedKeys, ReportedKeys} {
		for _, k := range table {
			if k.Source == "" || k.Impact == "" {
				t.Errorf("%s has no source or impact", k.Name())
			}
			if k.Section != CanonicalSection(k.Section) {
				t.Errorf("%s is not spelled canonically", k.Name())
			}
		}
	}
	for _, k := range ReportedKeys {
		if _, ok := OwnedKeyError(k.Section, k.Key); ok {
			t.Errorf("%s is both reported and rejected", k.Name())
		}
	}
}

func TestOwnedKeyError(t *testing.T) {
	tests := []struct {
		section, key string
		wantPrefix   string // "" means admitted
	}{
		{"DEFAULT", "host", "DEFAULT.host is managed via the Kubernetes node name and must not be set in extraConfig ("},
		{"DEFAULT", "my_ip", "DEFAULT.my_ip is managed via "},
		{"DEFAULT", "transport_url", "DEFAULT.transport_url is managed via the Nova's compute contract Secret"},
		{"DEFAULT", "state_path", "DEFAULT.state_path is managed via "},
		{"oslo_concurrency", "lock_path", "oslo_concurrency.lock_path is managed via "},
		{"libvirt", "connection_uri", "libvirt.connection_uri is managed via "},
		{"libvirt", "live_migration_scheme", "libvirt.live_migration_scheme is managed via "},
		{"libvirt", "live_migration_with_native_tls", "libvirt.live_migration_with_native_tls is managed via "},
		{"libvirt", "live_migration_uri", "libvirt.live_migration_uri is managed via "},
		{"libvirt", "live_migration_tunnelled", "libvirt.live_migration_tunnelled is managed via "},
		{"libvirt", "live_migration_inbound_addr", "libvirt.live_migration_inbound_addr is managed via "},
		{"os_vif_ovs", "ovsdb_connection", "os_vif_ovs.ovsdb_connection is managed via "},
		{"vnc", "server_proxyclient_address", "vnc.server_proxyclient_address is managed via "},
		{"keystone_authtoken", "password", "keystone_authtoken.password is managed via the Nova's compute contract Secret"},
		{"service_user", "password", "service_user.password is managed via "},
		{"placement", "password", "placement.password is managed via "},
		{"neutron", "password", "neutron.password is managed via "},
		{"cinder", "password", "cinder.password is managed via "},
		// Redirects of the service user's password, and the bus's TLS.
		{"placement", "auth_url", "placement.auth_url is managed via the Nova's compute contract Secret"},
		{"neutron", "endpoint_override", "neutron.endpoint_override is managed via "},
		{"barbican", "auth_url", "barbican.auth_url is managed via "},
		{"keystone_authtoken", "www_authenticate_uri", "keystone_authtoken.www_authenticate_uri is managed via "},
		{"oslo_messaging_rabbit", "ssl", "oslo_messaging_rabbit.ssl is managed via "},
		{"oslo_messaging_rabbit", "ssl_ca_file", "oslo_messaging_rabbit.ssl_ca_file is managed via "},
		// Every privsep section's root helper.
		{"privsep_osbrick", "helper_command", "privsep_osbrick.helper_command is managed via oslo.privsep"},
		{"PRIVSEP", "helper_command", "privsep.helper_command is managed via "},
		{"privsep_osbrick", "thread_pool_size", ""},
		// oslo.config reads every group but DEFAULT in lower case.
		{"LIBVIRT", "connection_uri", "libvirt.connection_uri is managed via "},
		{"Vnc", "server_proxyclient_address", "vnc.server_proxyclient_address is managed via "},
		// [default] is a group of its own, not DEFAULT.
		{"default", "host", ""},
		// Option names are exact.
		{"DEFAULT", "HOST", ""},
		// Reported keys are honoured, not refused.
		{"libvirt", "virt_type", ""},
		{"libvirt", "cpu_mode", ""},
		{"libvirt", "cpu_models", ""},
		{"libvirt", "images_type", ""},
		// Options next to owned ones stay free.
		{"DEFAULT", "compute_driver", ""},
		{"vnc", "server_listen", ""},
		{"libvirt", "live_migration_permit_post_copy", ""},
		{"glance", "password", ""},
		{"DEFAULT", "password", ""},
	}
	for _, tt := range tests {
		t.Run(tt.section+"."+tt.key, func(t *testing.T) {
			msg, ok := OwnedKeyError(tt.section, tt.key)
			if tt.wantPrefix == "" {
				if ok || msg != "" {
					t.Errorf("refused with %q", msg)
				}
				return
			}
			if !ok || !strings.HasPrefix(msg, tt.wantPrefix) || !strings.Contains(msg, " and must not be set in extraConfig (") || !strings.HasSuffix(msg, ")") {
				t.Errorf("OwnedKeyError = %q, %v; want a refusal starting %q", msg, ok, tt.wantPrefix)
			}
		})
	}
}

func TestOverriddenPoolKeys(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string]map[string]string
		want  []string
	}{
		{name: "nil", extra: nil},
		{name: "unowned only", extra: map[string]map[string]string{"DEFAULT": {"debug": "true"}, "libvirt": {"hw_machine_type": "x86_64=q35"}}},
		{name: "rejected keys are not reported", extra: map[string]map[string]string{"DEFAULT": {"host": "x"}, "libvirt": {"connection_uri": "qemu:///session"}}},
		{name: "all reported, sorted", extra: map[string]map[string]string{"libvirt": {
			"virt_type": "qemu", "images_type": "raw", "cpu_models": "Haswell", "cpu_mode": "custom", "disk_cachemodes": "file=none",
		}}, want: []string{"libvirt.cpu_mode", "libvirt.cpu_models", "libvirt.images_type", "libvirt.virt_type"}},
		{name: "section case is folded and deduplicated", extra: map[string]map[string]string{
			"libvirt": {"virt_type": "qemu"}, "LIBVIRT": {"virt_type": "kvm"},
		}, want: []string{"libvirt.virt_type"}},
		{name: "another section does not count", extra: map[string]map[string]string{"DEFAULT": {"virt_type": "qemu"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OverriddenPoolKeys(tt.extra); !slices.Equal(got, tt.want) {
				t.Errorf("OverriddenPoolKeys = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCanonicalSection(t *testing.T) {
	for in, want := range map[string]string{
		"DEFAULT": "DEFAULT", "default": "default", "Default": "default",
		"libvirt": "libvirt", "LibVirt": "libvirt", "os_vif_ovs": "os_vif_ovs",
	} {
		if got := CanonicalSection(in); got != want {
			t.Errorf("CanonicalSection(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckExtraConfig(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string]map[string]string
		want  string
	}{
		{name: "none"},
		{name: "free options only", extra: map[string]map[string]string{"libvirt": {"virt_type": "qemu"}, "DEFAULT": {"debug": "true"}}},
		{name: "the first owned option in order", extra: map[string]map[string]string{
			"placement": {"auth_url": "https://evil.example.com/v3"}, "DEFAULT": {"host": "x", "debug": "true"}},
			want: "DEFAULT.host is managed via "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckExtraConfig(tt.extra)
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Errorf("CheckExtraConfig = %q, want prefix %q", got, tt.want)
			}
			if strings.Contains(got, "evil") {
				t.Errorf("the refusal echoes a value: %q", got)
			}
		})
	}
}
