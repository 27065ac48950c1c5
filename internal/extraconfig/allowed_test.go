package extraconfig

import (
	"os"
	"strings"
	"testing"
)

// The options the review showed loading code or redirecting the password,
// and their kin, are refused by name; the options a pool tunes pass.
func TestExtraConfigError(t *testing.T) {
	tests := []struct {
		section, key string
		refused      bool
		// detail is a substring of the refusal.
		detail string
	}{
		// Loading code through oslo.log's file config, and its sections.
		{"DEFAULT", "log_config_append", true, "DEFAULT.log_config_append is not an option a pool may set"},
		{"DEFAULT", "log_dir", true, "DEFAULT.log_dir is not"},
		{"DEFAULT", "log_file", true, "DEFAULT.log_file is not"},
		{"loggers", "keys", true, "loggers.keys is not"},
		{"handlers", "keys", true, "handlers.keys is not"},
		{"formatters", "keys", true, "formatters.keys is not"},
		{"handler_x", "args", true, "handler_x.args is not"},
		// Drivers and plugins.
		{"DEFAULT", "compute_driver", true, "DEFAULT.compute_driver is not"},
		{"DEFAULT", "compute_monitors", true, "is not"},
		{"key_manager", "backend", true, "is not"},
		{"oslo_messaging_notifications", "driver", true, "is not"},
		// Sending the service password elsewhere.
		{"placement", "auth_type", true, "placement.auth_type is not"},
		{"placement", "auth_section", true, "placement.auth_section is not"},
		{"placement", "endpoint", true, "placement.endpoint is not"},
		{"placement", "auth_url", true, "is managed via"},
		{"neutron", "url", true, "is not"},
		{"oslo_messaging_notifications", "transport_url", true, "is not"},
		{"glance", "api_servers", true, "is not"},
		// Files and paths.
		{"DEFAULT", "instances_path", true, "is not"},
		{"oslo_messaging_rabbit", "ssl_cert_file", true, "is not"},
		{"vnc", "server_listen", true, "vnc.server_listen is not"},
		// Spellings oslo.config reads as another group, or another option.
		{"default", "debug", true, "default.debug is not"},
		{"DEFAULT", "log-config-append", true, "is not"},
		// Owned options keep their own reason.
		{"DEFAULT", "host", true, "DEFAULT.host is managed via"},
		// What a pool tunes.
		{"DEFAULT", "debug", false, ""},
		{"DEFAULT", "cpu_allocation_ratio", false, ""},
		{"LIBVIRT", "hw_machine_type", false, ""},
		{"libvirt", "virt_type", false, ""},
		{"compute", "cpu_dedicated_set", false, ""},
		{"pci", "device_spec", false, ""},
		{"oslo_messaging_rabbit", "heartbeat_timeout_threshold", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.section+"."+tt.key, func(t *testing.T) {
			msg := Refusal(tt.section, tt.key)
			if !tt.refused {
				if msg != "" {
					t.Fatalf("refused: %s", msg)
				}
				return
			}
			if msg == "" || !strings.Contains(msg, tt.detail) {
				t.Errorf("refusal %q, want one saying %q", msg, tt.detail)
			}
		})
	}
}

// No allowed option names a file, a path, a URL, a driver or a credential,
// and none is also owned: the allowlist's promise, checked on every entry.
func TestAllowedOptionsStayHarmless(t *testing.T) {
	for _, g := range AllowedOptions {
		if g.Why == "" || CanonicalSection(g.Section) != g.Section {
			t.Errorf("group %s: needs a reason and a canonical section name", g.Section)
		}
		for _, k := range g.Keys {
			for _, bad := range []string{"_file", "_path", "_dir", "url", "driver", "password", "auth", "endpoint", "append"} {
				if strings.Contains(k, bad) {
					t.Errorf("%s.%s looks like a %s option", g.Section, k, bad)
				}
			}
			if _, owned := OwnedKeyError(g.Section, k); owned {
				t.Errorf("%s.%s is both allowed and owned", g.Section, k)
			}
		}
	}
}

// The refusal sends users to the admission reference for the list, so the
// list there names every allowed option.
func TestAllowedOptionsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/reference/novacompute-admission.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range AllowedOptions {
		for _, k := range g.Keys {
			if !strings.Contains(string(doc), "`"+k+"`") {
				t.Errorf("%s.%s is allowed but not named in docs/reference/novacompute-admission.md", g.Section, k)
			}
		}
	}
}
