package novaconfig

import (
	"bytes"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// controlPlaneGoldenDir keeps the control plane's goldens apart from the
// contract's, which TestNoStaleGoldens and the compute validator run own.
var controlPlaneGoldenDir = filepath.Join("testdata", "controlplane")

func cpInput(base ContractInput) ControlPlaneInput {
	m := manageInput()
	return ControlPlaneInput{ContractInput: base, APIDatabase: m.APIDatabase, Database: m.Database}
}

// controlPlaneCases are the pinned nova.conf files; the validator test
// checks each of them.
var controlPlaneCases = []struct {
	name  string
	input func() ControlPlaneInput
}{
	{"plaintext", func() ControlPlaneInput { return cpInput(plaintextInput()) }},
	{"tls", func() ControlPlaneInput { return cpInput(tlsInput()) }},
	{"full", func() ControlPlaneInput { return cpInput(fullInput()) }},
	{"minimal", func() ControlPlaneInput {
		in := cpInput(plaintextInput())
		in.Region, in.KeystonePublicEndpoint, in.Debug = "", "", true
		return in
	}},
}

func renderCP(t *testing.T, in ControlPlaneInput) (map[string][]byte, map[string]map[string]string) {
	t.Helper()
	data, err := RenderControlPlane(in)
	if err != nil {
		t.Fatalf("RenderControlPlane() error = %v", err)
	}
	return data, parseINI(t, data[KeyControlPlaneConfig])
}

func TestControlPlaneGoldens(t *testing.T) {
	for _, gc := range controlPlaneCases {
		t.Run(gc.name, func(t *testing.T) {
			data, _ := renderCP(t, gc.input())
			got := data[KeyControlPlaneConfig]
			path := filepath.Join(controlPlaneGoldenDir, gc.name+".golden")
			if *update {
				if err := os.MkdirAll(controlPlaneGoldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/novaconfig -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("nova.conf differs from %s (rerun with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// TestControlPlaneNoStaleGoldens keeps the golden directory equal to
// controlPlaneCases, so the validator never checks a file nobody renders.
func TestControlPlaneNoStaleGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(controlPlaneGoldenDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, gc := range controlPlaneCases {
		want = append(want, filepath.Join(controlPlaneGoldenDir, gc.name+".golden"))
	}
	if !slices.Equal(sorted(files), sorted(want)) {
		t.Errorf("golden files = %v, want %v", files, want)
	}
}

// TestControlPlaneExtendsContract is the drift guard: every option of the
// in-cluster contract is in nova.conf with the same value, except the CA
// path, and nova.conf adds exactly the options listed here.
func TestControlPlaneExtendsContract(t *testing.T) {
	dbURL := func(schema string) string {
		return "mysql+pymysql://nova:" + testDBPassword + "@mariadb.openstack.svc:3306/" + schema + "?charset=utf8mb4"
	}
	// The options nova.conf adds to the full input, and the one it changes.
	wantExtra := map[string]string{
		"DEFAULT/transport_url":                           testTransportURL,
		"api/auth_strategy":                               "keystone",
		"wsgi/api_paste_config":                           "/etc/nova/api-paste.ini",
		"api_database/connection":                         dbURL("nova_api"),
		"database/connection":                             dbURL("nova"),
		"keystone_authtoken/password":                     testPassword,
		"keystone_authtoken/service_token_roles_required": "true",
		"service_user/password":                           testPassword,
		"placement/password":                              testPassword,
		"neutron/password":                                testPassword,
		"neutron/service_metadata_proxy":                  "true",
		"neutron/metadata_proxy_shared_secret":            testSharedSecret,
		"cinder/password":                                 testPassword,
		"cache/enabled":                                   "true",
		"cache/backend":                                   "oslo_cache.dict",
		"oslo_concurrency/lock_path":                      "/var/lib/nova/tmp",
		"vnc/novncproxy_host":                             "0.0.0.0",
		"vnc/novncproxy_port":                             "6080",
		"oslo_messaging_rabbit/ssl_ca_file":               "/etc/nova/nova.conf.d/ca.crt",
	}
	for _, gc := range controlPlaneCases {
		t.Run(gc.name, func(t *testing.T) {
			in := gc.input()
			_, cp := renderCP(t, in)
			contract, err := RenderContract(in.ContractInput)
			if err != nil {
				t.Fatal(err)
			}
			extra := map[string]string{}
			for sec, opts := range cp {
				for opt, v := range opts {
					extra[sec+"/"+opt] = v
				}
			}
			for sec, opts := range parseINI(t, contract[KeyConfig]) {
				for opt, v := range opts {
					path := sec + "/" + opt
					if got, ok := extra[path]; !ok || (got != v && path != "oslo_messaging_rabbit/ssl_ca_file") {
						t.Errorf("%s = %q (present %v), want the contract's %q", path, got, ok, v)
					}
					if path != "oslo_messaging_rabbit/ssl_ca_file" {
						delete(extra, path)
					}
				}
			}
			if gc.name == "full" && !mapsEqual(extra, wantExtra) {
				t.Errorf("nova.conf adds %v, want %v", extra, wantExtra)
			}
			for path := range extra {
				if _, ok := wantExtra[path]; !ok {
					t.Errorf("nova.conf adds %s, which is not listed", path)
				}
			}
		})
	}
}

func TestControlPlaneSections(t *testing.T) {
	head := []string{"DEFAULT", "api", "wsgi", "api_database", "database", "keystone_authtoken", "service_user",
		"placement", "neutron", "glance", "cache", "oslo_messaging_rabbit", "oslo_messaging_notifications",
		"oslo_concurrency", "upgrade_levels", "vnc"}
	tests := []struct {
		name             string
		cinder, barbican bool
		console          bool
		tail             []string
	}{
		{"neither", false, false, false, nil},
		{"cinder", true, false, true, []string{"cinder"}},
		{"barbican", false, true, false, []string{"key_manager", "barbican"}},
		{"both", true, true, true, []string{"cinder", "key_manager", "barbican"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := cpInput(fullInput())
			in.Cinder.Enabled, in.Barbican.Enabled, in.ConsoleProxyEnabled = tt.cinder, tt.barbican, tt.console
			data, got := renderCP(t, in)
			if names := sectionNames(t, data[KeyControlPlaneConfig]); !slices.Equal(names, append(slices.Clone(head), tt.tail...)) {
				t.Errorf("sections = %v", names)
			}
			_, hasPassword := got["cinder"]["password"]
			if hasPassword != tt.cinder {
				t.Errorf("[cinder] password present = %v", hasPassword)
			}
			wantVNC := map[string]string{"enabled": "false"}
			if tt.console {
				wantVNC = map[string]string{"enabled": "true", "novncproxy_base_url": "https://console.example.test/vnc_lite.html",
					"novncproxy_host": "0.0.0.0", "novncproxy_port": "6080"}
			}
			if !mapsEqual(got["vnc"], wantVNC) {
				t.Errorf("[vnc] = %v, want %v", got["vnc"], wantVNC)
			}
		})
	}
}

func TestControlPlaneKeys(t *testing.T) {
	plain := []string{KeyControlPlaneConfig}
	withCA := []string{KeyControlPlaneCABundle, KeyControlPlaneConfig}
	tests := []struct {
		name string
		in   ControlPlaneInput
		want []string
	}{
		{"plaintext", cpInput(plaintextInput()), plain},
		{"empty CA bundle is plaintext", func() ControlPlaneInput { in := cpInput(plaintextInput()); in.CABundle = []byte{}; return in }(), plain},
		{"tls", cpInput(tlsInput()), withCA},
		{"full", cpInput(fullInput()), withCA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, got := renderCP(t, tt.in)
			if keys := sortedKeys(data); !slices.Equal(keys, tt.want) {
				t.Errorf("keys = %v, want %v", keys, tt.want)
			}
			ca, hasCA := data[KeyControlPlaneCABundle]
			if hasCA && string(ca) != testCA {
				t.Errorf("ca.crt = %q", ca)
			}
			rabbit := got["oslo_messaging_rabbit"]
			if tls := rabbit["ssl"] == "true" && rabbit["ssl_ca_file"] == ControlPlaneMountPath+"/"+KeyControlPlaneCABundle; tls != hasCA {
				t.Errorf("ssl lines present = %v but ca.crt present = %v: %v", tls, hasCA, rabbit)
			}
		})
	}
	in := cpInput(tlsInput())
	data, _ := renderCP(t, in)
	in.CABundle[0] = 'X'
	if string(data[KeyControlPlaneCABundle]) != testCA {
		t.Error("changing the input CA bundle changed rendered data")
	}
}

func TestControlPlaneOptionalLines(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ControlPlaneInput)
		want   map[string]string // "" = absent
	}{
		{"no region", func(in *ControlPlaneInput) { in.Region = "" }, map[string]string{
			"keystone_authtoken/region_name": "", "placement/region_name": "", "neutron/region_name": "",
			"glance/region_name": "", "cinder/os_region_name": "", "barbican/barbican_region_name": "",
		}},
		{"no overrides", func(in *ControlPlaneInput) {
			in.PlacementOverride, in.NeutronOverride, in.GlanceOverride = "", "", ""
			in.Cinder.Override, in.Barbican.Override = "", ""
		}, map[string]string{
			"placement/endpoint_override": "", "neutron/endpoint_override": "", "glance/endpoint_override": "",
			"cinder/endpoint_template": "", "barbican/barbican_endpoint": "",
		}},
		{"public Keystone falls back", func(in *ControlPlaneInput) { in.KeystonePublicEndpoint = "" }, map[string]string{
			"keystone_authtoken/www_authenticate_uri": "http://keystone.openstack.svc:5000/v3",
		}},
		{"debug", func(in *ControlPlaneInput) { in.Debug = true }, map[string]string{"DEFAULT/debug": "true"}},
		{"plaintext bus", func(in *ControlPlaneInput) { in.CABundle = nil }, map[string]string{
			"oslo_messaging_rabbit/ssl": "", "oslo_messaging_rabbit/ssl_ca_file": "",
			"oslo_messaging_rabbit/rabbit_quorum_queue": "true",
		}},
		{"no barbican", func(in *ControlPlaneInput) { in.Barbican.Enabled = false }, map[string]string{
			"key_manager/backend": "", "barbican/auth_endpoint": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := cpInput(fullInput())
			tt.mutate(&in)
			_, got := renderCP(t, in)
			for path, want := range tt.want {
				sec, opt, _ := strings.Cut(path, "/")
				if v, ok := got[sec][opt]; ok != (want != "") || v != want {
					t.Errorf("%s = %q (present %v), want %q", path, v, ok, want)
				}
			}
		})
	}
}

func TestControlPlaneDeterministic(t *testing.T) {
	first, _ := renderCP(t, cpInput(fullInput()))
	for range 10 {
		again, _ := renderCP(t, cpInput(fullInput()))
		if !bytes.Equal(first[KeyControlPlaneConfig], again[KeyControlPlaneConfig]) || Hash(first) != Hash(again) {
			t.Fatal("two renders of the same input differ")
		}
	}
}

func TestControlPlaneMissingInputs(t *testing.T) {
	tests := []struct {
		input  string
		mutate func(*ControlPlaneInput)
	}{
		{"ContractInput.KeystoneEndpoint", func(in *ControlPlaneInput) { in.KeystoneEndpoint = "" }},
		{"ContractInput.TransportURL", func(in *ControlPlaneInput) { in.TransportURL = "" }},
		{"ContractInput.ServiceUser.Username", func(in *ControlPlaneInput) { in.ServiceUser.Username = "" }},
		{"ContractInput.ServiceUser.ProjectDomainName", func(in *ControlPlaneInput) { in.ServiceUser.ProjectDomainName = "" }},
		{"ContractInput.Password", func(in *ControlPlaneInput) { in.Password = "" }},
		{"ContractInput.MetadataSharedSecret", func(in *ControlPlaneInput) { in.MetadataSharedSecret = "" }},
		{"ContractInput.CellName", func(in *ControlPlaneInput) { in.CellName = "" }},
		{"ContractInput.NoVNCProxyBaseURL", func(in *ControlPlaneInput) { in.NoVNCProxyBaseURL = "" }},
		{"ControlPlaneInput.APIDatabase.Host", func(in *ControlPlaneInput) { in.APIDatabase.Host = "" }},
		{"ControlPlaneInput.APIDatabase.Password", func(in *ControlPlaneInput) { in.APIDatabase.Password = "" }},
		{"ControlPlaneInput.Database.Database", func(in *ControlPlaneInput) { in.Database.Database = "" }},
		{"ControlPlaneInput.Database.Username", func(in *ControlPlaneInput) { in.Database.Username = "" }},
		// An empty database is reported by its first field.
		{"ControlPlaneInput.Database.Host", func(in *ControlPlaneInput) { in.Database = Database{} }},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			in := cpInput(fullInput())
			tt.mutate(&in)
			data, err := RenderControlPlane(in)
			var m *MissingInputError
			if !errors.As(err, &m) || m.Input != tt.input || data != nil {
				t.Fatalf("RenderControlPlane() = %v, %v; want missing %s", data, err, tt.input)
			}
		})
	}
	in := cpInput(fullInput())
	in.APIDatabase.Port = 70000
	_, err := RenderControlPlane(in)
	if want := "control plane config input ControlPlaneInput.APIDatabase.Port is 70000, not in 1-65535"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

// TestControlPlaneRefusesUnsafeInputs puts a control character, or a
// backslash before a '$', into each input and checks the section named
// and that the message carries none of the credential.
func TestControlPlaneRefusesUnsafeInputs(t *testing.T) {
	const cred = "cred-3f9a"
	nl, bd := cred+"\n[DEFAULT]\ndebug = true", cred+`\$x`
	tests := []struct {
		name    string
		mutate  func(*ControlPlaneInput)
		section string
		reason  UnsafeReason
	}{
		{"password", func(in *ControlPlaneInput) { in.Password = nl }, "cinder", ControlCharacter},
		{"password without cinder", func(in *ControlPlaneInput) { in.Password, in.Cinder.Enabled = nl, false }, "keystone_authtoken", ControlCharacter},
		{"shared secret", func(in *ControlPlaneInput) { in.MetadataSharedSecret = nl }, "neutron", ControlCharacter},
		{"transport URL", func(in *ControlPlaneInput) { in.TransportURL = "rabbit://nova:" + nl + "@rabbitmq/" }, "DEFAULT", ControlCharacter},
		{"API database password", func(in *ControlPlaneInput) { in.APIDatabase.Password = nl }, "api_database", ControlCharacter},
		{"cell database user", func(in *ControlPlaneInput) { in.Database.Username = "nova\r" + cred }, "database", ControlCharacter},
		{"cell database host", func(in *ControlPlaneInput) { in.Database.Host = "db\u0085" + cred }, "database", ControlCharacter},
		{"console URL", func(in *ControlPlaneInput) { in.NoVNCProxyBaseURL = "https://x/" + nl }, "vnc", ControlCharacter},
		{"region", func(in *ControlPlaneInput) { in.Region = nl }, "barbican", ControlCharacter},
		{"control character beats backslash", func(in *ControlPlaneInput) { in.Password, in.NoVNCProxyBaseURL = bd, nl }, "vnc", ControlCharacter},
		{"password with backslash-dollar", func(in *ControlPlaneInput) { in.Password = bd }, "cinder", BackslashDollar},
		{"shared secret with backslash-dollar", func(in *ControlPlaneInput) { in.MetadataSharedSecret = bd }, "neutron", BackslashDollar},
		{"transport URL with backslash-dollar", func(in *ControlPlaneInput) { in.TransportURL = "rabbit://nova:pw@rabbitmq/" + bd }, "DEFAULT", BackslashDollar},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := cpInput(fullInput())
			tt.mutate(&in)
			data, err := RenderControlPlane(in)
			var u *UnsafeValueError
			if !errors.As(err, &u) || u.Section != tt.section || u.Reason != tt.reason || data != nil {
				t.Fatalf("RenderControlPlane() = %v, %v; want reason %d in [%s]", data, err, tt.reason, tt.section)
			}
			if msg := err.Error(); strings.Contains(msg, cred) || strings.Contains(msg, "\n") {
				t.Errorf("message %q carries the credential", msg)
			}
		})
	}
	// A backslash in a database password is percent-escaped in the URL, so
	// it reaches oslo.config without the '\$' it cannot read.
	in := cpInput(fullInput())
	in.Database.Password = `db\$pw`
	if _, err := RenderControlPlane(in); err != nil {
		t.Errorf("database password with a backslash-dollar refused: %v", err)
	}
}

func TestControlPlaneRefusesNonRabbitTransport(t *testing.T) {
	in := cpInput(fullInput())
	in.TransportURL = "amqp://nova:" + testPassword + "@rabbitmq:5672/"
	data, err := RenderControlPlane(in)
	if want := `ContractInput.TransportURL: transport URL scheme "amqp" is not rabbit`; err == nil || err.Error() != want || data != nil {
		t.Errorf("RenderControlPlane() = %v, %v; want %q", data, err, want)
	}
}

// TestControlPlaneDollarRoundTrip reads the rendered file back the way
// oslo.config does: every credential comes back as given, and none of them
// triggers a variable lookup.
func TestControlPlaneDollarRoundTrip(t *testing.T) {
	const (
		password  = "p$ss${x}$$"
		secret    = ` "$meta${y.z}" `
		transport = "rabbit://nova:b$us$z$$@rabbitmq:5672/${vhost}"
		dbPass    = "d$b${w}$$"
	)
	in := cpInput(fullInput())
	in.Password, in.MetadataSharedSecret, in.TransportURL = password, secret, transport
	in.APIDatabase.Password, in.Database.Password = dbPass, dbPass
	_, got := renderCP(t, in)
	read := func(path string) string {
		t.Helper()
		sec, opt, _ := strings.Cut(path, "/")
		v, err := osloRead(got[sec][opt])
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		return v
	}
	for _, path := range []string{"keystone_authtoken/password", "service_user/password", "placement/password",
		"neutron/password", "cinder/password"} {
		if v := read(path); v != password {
			t.Errorf("%s reads back as %q, want %q", path, v, password)
		}
	}
	if v := read("neutron/metadata_proxy_shared_secret"); v != secret {
		t.Errorf("shared secret reads back as %q, want %q", v, secret)
	}
	if v := read("DEFAULT/transport_url"); v != transport {
		t.Errorf("transport_url reads back as %q, want %q", v, transport)
	}
	for _, sec := range []string{"api_database", "database"} {
		u, err := url.Parse(read(sec + "/connection"))
		if err != nil {
			t.Fatalf("[%s] connection does not parse: %v", sec, err)
		}
		if pw, _ := u.User.Password(); pw != dbPass {
			t.Errorf("[%s] password reads back as %q, want %q", sec, pw, dbPass)
		}
	}
}

// TestIntegrationOsloConfigReadsControlPlane mounts the Secret's data as a
// directory, as the Deployments do, and has the real oslo.config read the
// credentials back: ca.crt beside nova.conf must not be parsed, and no
// '$', quote or space may change a value.
func TestIntegrationOsloConfigReadsControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo.config")
	}
	const (
		password  = `"p$ss${x}$$"`
		secret    = " $HOME${a.b} "
		transport = "rabbit://nova:b$us$z$$@rabbitmq:5671/${vhost}"
		dbPass    = `d$b${w}$$ \$ "`
	)
	in := cpInput(fullInput())
	in.Password, in.MetadataSharedSecret, in.TransportURL = password, secret, transport
	in.APIDatabase.Password = dbPass
	data, err := RenderControlPlane(in)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for key, value := range data {
		if err := os.WriteFile(filepath.Join(dir, key), value, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"keystone_authtoken/password":          password,
		"service_user/password":                password,
		"cinder/password":                      password,
		"neutron/metadata_proxy_shared_secret": secret,
		"DEFAULT/transport_url":                transport,
		"oslo_messaging_rabbit/ssl_ca_file":    filepath.Join(ControlPlaneMountPath, KeyControlPlaneCABundle),
		"oslo_concurrency/lock_path":           "/var/lib/nova/tmp",
	}
	paths := append(slices.Sorted(maps.Keys(want)), "api_database/connection")
	got := osloReadDir(t, dir, paths)
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: oslo.config read %q, want %q", path, got[path], w)
		}
	}
	u, err := url.Parse(got["api_database/connection"])
	if err != nil {
		t.Fatalf("[api_database] connection does not parse: %v", err)
	}
	if pw, _ := u.User.Password(); pw != dbPass {
		t.Errorf("[api_database] password reads back as %q, want %q", pw, dbPass)
	}
}
