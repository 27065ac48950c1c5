package novaconfig

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current renderer")

// Fixture values. The credentials are distinctive so that a test can tell
// whether one of them leaked into the fragment or an error message.
const (
	testPassword     = "svc-pw-4d1f"
	testSharedSecret = "meta-secret-9c2e"
	testTransportURL = "rabbit://nova:bus-pw-77aa@rabbitmq.openstack.svc:5672/"
	testRemoteURL    = "rabbit://nova:bus-pw-77aa@198.51.100.10:5671/"
	testCA           = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdC1jYQ==\n-----END CERTIFICATE-----\n"
)

var testRemote = RemoteInput{
	KeystoneEndpoint: "https://keystone.example.test/v3",
	TransportURL:     testRemoteURL,
}

// plaintextInput is the base fixture: region set, no pinned endpoints, no
// optional services, no console proxy, plaintext bus.
func plaintextInput() ContractInput {
	return ContractInput{
		KeystoneEndpoint:       "http://keystone.openstack.svc:5000/v3",
		KeystonePublicEndpoint: "https://keystone.example.test/v3",
		Region:                 "RegionOne",
		ServiceUser: ServiceUser{
			Username: "nova", ProjectName: "service",
			UserDomainName: "Default", ProjectDomainName: "Default",
		},
		Password:             testPassword,
		TransportURL:         testTransportURL,
		MetadataSharedSecret: testSharedSecret,
		CellName:             "cell1",
	}
}

func tlsInput() ContractInput {
	in := plaintextInput()
	in.CABundle = []byte(testCA)
	return in
}

// fullInput turns on everything the fragment can carry, so that every
// section and every optional line appears at least once.
func fullInput() ContractInput {
	in := tlsInput()
	in.PlacementOverride = "http://placement.openstack.svc:8778"
	in.NeutronOverride = "http://neutron.openstack.svc:9696"
	in.GlanceOverride = "http://glance.openstack.svc:9292"
	in.Cinder = OptionalService{Enabled: true, Override: "http://cinder.openstack.svc:8776/v3/%(project_id)s"}
	in.Barbican = OptionalService{Enabled: true, Override: "http://barbican.openstack.svc:9311"}
	in.ConsoleProxyEnabled = true
	in.NoVNCProxyBaseURL = "https://console.example.test/vnc_lite.html"
	return in
}

// goldenCases are the pinned fragments. Each has an in-cluster and a
// remote golden file.
var goldenCases = []struct {
	name  string
	input func() ContractInput
}{
	{"plaintext", plaintextInput},
	{"tls", tlsInput},
	{"cinder-barbican", func() ContractInput {
		in := tlsInput()
		in.Cinder = OptionalService{Enabled: true, Override: "http://cinder.openstack.svc:8776/v3/%(project_id)s"}
		in.Barbican = OptionalService{Enabled: true, Override: "http://barbican.openstack.svc:9311"}
		in.PlacementOverride = "http://placement.openstack.svc:8778"
		in.NeutronOverride = "http://neutron.openstack.svc:9696"
		in.GlanceOverride = "http://glance.openstack.svc:9292"
		return in
	}},
	{"console-on", func() ContractInput {
		in := tlsInput()
		in.ConsoleProxyEnabled = true
		in.NoVNCProxyBaseURL = "https://console.example.test/vnc_lite.html"
		return in
	}},
	{"console-off", func() ContractInput {
		// A URL without the proxy must not be written.
		in := tlsInput()
		in.NoVNCProxyBaseURL = "https://console.example.test/vnc_lite.html"
		return in
	}},
	{"minimal", func() ContractInput {
		// No region, no public Keystone, debug on: the fallbacks.
		in := plaintextInput()
		in.Region = ""
		in.KeystonePublicEndpoint = ""
		in.Debug = true
		return in
	}},
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".golden") }

func renderBoth(t *testing.T, in ContractInput) (local, remote map[string][]byte) {
	t.Helper()
	local, err := RenderContract(in)
	if err != nil {
		t.Fatalf("RenderContract() error = %v", err)
	}
	remote, err = RenderRemoteContract(in, testRemote)
	if err != nil {
		t.Fatalf("RenderRemoteContract() error = %v", err)
	}
	return local, remote
}

func TestGoldenFragments(t *testing.T) {
	for _, gc := range goldenCases {
		local, remote := renderBoth(t, gc.input())
		for name, data := range map[string]map[string][]byte{
			"in-cluster-" + gc.name: local,
			"remote-" + gc.name:     remote,
		} {
			t.Run(name, func(t *testing.T) {
				got := data[KeyConfig]
				path := goldenPath(name)
				if *update {
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
					t.Errorf("fragment differs from %s (rerun with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			})
		}
	}
}

// TestNoStaleGoldens keeps testdata equal to goldenCases, so the validator
// test never checks a file the renderer no longer produces.
func TestNoStaleGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, gc := range goldenCases {
		want = append(want, goldenPath("in-cluster-"+gc.name), goldenPath("remote-"+gc.name))
	}
	sort.Strings(files)
	sort.Strings(want)
	if !slices.Equal(files, want) {
		t.Errorf("golden files = %v, want %v", files, want)
	}
}

func TestRenderDeterministic(t *testing.T) {
	a, _ := renderBoth(t, fullInput())
	for range 5 {
		b, _ := renderBoth(t, fullInput())
		if Hash(a) != Hash(b) {
			t.Fatal("two renders of the same input differ")
		}
	}
}

func TestSectionOrder(t *testing.T) {
	base := []string{
		"DEFAULT", "keystone_authtoken", "service_user", "placement", "neutron", "glance",
		"oslo_messaging_rabbit", "oslo_messaging_notifications", "upgrade_levels", "vnc",
	}
	tests := []struct {
		name             string
		cinder, barbican bool
		want             []string
	}{
		{"neither", false, false, base},
		{"cinder", true, false, append(slices.Clone(base), "cinder")},
		{"barbican", false, true, append(slices.Clone(base), "key_manager", "barbican")},
		{"both", true, true, append(slices.Clone(base), "cinder", "key_manager", "barbican")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := plaintextInput()
			in.Cinder.Enabled, in.Barbican.Enabled = tt.cinder, tt.barbican
			local, remote := renderBoth(t, in)
			for _, data := range []map[string][]byte{local, remote} {
				if got := sectionNames(t, data[KeyConfig]); !slices.Equal(got, tt.want) {
					t.Errorf("sections = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestKeySets(t *testing.T) {
	five := []string{KeyCellName, KeyMetadataSecret, KeyConfig, KeyPassword, KeyTransportURL}
	six := append(slices.Clone(five), KeyCABundle)
	tests := []struct {
		name string
		in   ContractInput
		want []string
	}{
		{"plaintext", plaintextInput(), five},
		{"empty CA bundle is plaintext", func() ContractInput { in := plaintextInput(); in.CABundle = []byte{}; return in }(), five},
		{"tls", tlsInput(), six},
		{"full", fullInput(), six},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			local, remote := renderBoth(t, tt.in)
			for form, data := range map[string]map[string][]byte{"in-cluster": local, "remote": remote} {
				if got := sortedKeys(data); !slices.Equal(got, sorted(tt.want)) {
					t.Errorf("%s keys = %v, want %v", form, got, sorted(tt.want))
				}
				if string(data[KeyPassword]) != testPassword ||
					string(data[KeyMetadataSecret]) != testSharedSecret ||
					string(data[KeyCellName]) != "cell1" {
					t.Errorf("%s credential keys do not carry the inputs", form)
				}
				if ca, ok := data[KeyCABundle]; ok && string(ca) != testCA {
					t.Errorf("%s ca.crt = %q", form, ca)
				}
				tlsLines := strings.Contains(string(data[KeyConfig]), "ssl = true\nssl_ca_file = /etc/nova/compute-config/ca.crt\n")
				if _, hasCA := data[KeyCABundle]; tlsLines != hasCA {
					t.Errorf("%s: ssl lines present = %v but ca.crt present = %v", form, tlsLines, hasCA)
				}
			}
			if string(local[KeyTransportURL]) != testTransportURL || string(remote[KeyTransportURL]) != testRemoteURL {
				t.Error("transport_url is not the in-cluster URL locally and the handed URL remotely")
			}
		})
	}
}

func TestCABundleIsCopied(t *testing.T) {
	in := tlsInput()
	data, err := RenderContract(in)
	if err != nil {
		t.Fatal(err)
	}
	before := Hash(data)
	in.CABundle[0] = 'X'
	if Hash(data) != before {
		t.Error("changing the input CA bundle changed rendered data")
	}
}

// TestOmissions pins what the fragment must never carry, for every fixture
// and both forms.
func TestOmissions(t *testing.T) {
	forbiddenSections := []string{
		"database", "api_database", "api", "cache", "scheduler", "conductor",
		"oslo_concurrency", "libvirt",
	}
	forbiddenOptions := []string{
		"DEFAULT/host", "DEFAULT/state_path", "DEFAULT/log_config_append", "DEFAULT/transport_url",
		"keystone_authtoken/memcached_servers", "keystone_authtoken/password",
		"neutron/service_metadata_proxy", "neutron/metadata_proxy_shared_secret",
		"service_user/password", "placement/password", "neutron/password", "cinder/password",
	}
	for _, gc := range goldenCases {
		local, remote := renderBoth(t, gc.input())
		for form, data := range map[string]map[string][]byte{"in-cluster": local, "remote": remote} {
			conf := data[KeyConfig]
			parsed := parseINI(t, conf)
			for _, s := range forbiddenSections {
				if _, ok := parsed[s]; ok {
					t.Errorf("%s/%s: has section [%s]", gc.name, form, s)
				}
			}
			for _, so := range forbiddenOptions {
				sec, opt, _ := strings.Cut(so, "/")
				if _, ok := parsed[sec][opt]; ok {
					t.Errorf("%s/%s: has %s", gc.name, form, so)
				}
			}
			for _, secret := range []string{testPassword, testSharedSecret, "bus-pw-77aa"} {
				if bytes.Contains(conf, []byte(secret)) {
					t.Errorf("%s/%s: fragment contains a credential", gc.name, form)
				}
			}
			// region_name is dead config in [service_user]; see fragment.
			if _, ok := parsed["service_user"]["region_name"]; ok {
				t.Errorf("%s/%s: [service_user] has region_name", gc.name, form)
			}
		}
	}
}

func TestSectionContents(t *testing.T) {
	local, _ := renderBoth(t, fullInput())
	got := parseINI(t, local[KeyConfig])
	identity := map[string]string{
		"auth_type": "password", "auth_url": "http://keystone.openstack.svc:5000/v3",
		"username": "nova", "project_name": "service",
		"user_domain_name": "Default", "project_domain_name": "Default",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range identity {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	want := map[string]map[string]string{
		"DEFAULT": {"use_stderr": "true", "debug": "false"},
		"keystone_authtoken": with(map[string]string{
			"www_authenticate_uri": "https://keystone.example.test/v3", "region_name": "RegionOne",
		}),
		"service_user": with(map[string]string{"send_service_user_token": "true"}),
		"placement": with(map[string]string{
			"region_name": "RegionOne", "valid_interfaces": "internal",
			"endpoint_override": "http://placement.openstack.svc:8778",
		}),
		"neutron": with(map[string]string{
			"region_name": "RegionOne", "valid_interfaces": "internal",
			"endpoint_override": "http://neutron.openstack.svc:9696",
		}),
		"glance": {
			"valid_interfaces": "internal", "region_name": "RegionOne",
			"endpoint_override": "http://glance.openstack.svc:9292",
		},
		"oslo_messaging_rabbit": {
			"rabbit_quorum_queue": "true", "rabbit_transient_quorum_queue": "true",
			"use_queue_manager": "true", "ssl": "true", "ssl_ca_file": "/etc/nova/compute-config/ca.crt",
		},
		"oslo_messaging_notifications": {"driver": "noop"},
		"upgrade_levels":               {"compute": "auto"},
		"vnc":                          {"enabled": "true", "novncproxy_base_url": "https://console.example.test/vnc_lite.html"},
		"cinder": with(map[string]string{
			"catalog_info": "block-storage:cinder:internalURL", "os_region_name": "RegionOne",
			"endpoint_template": "http://cinder.openstack.svc:8776/v3/%(project_id)s",
		}),
		"key_manager": {"backend": "barbican"},
		"barbican": {
			"auth_endpoint": "http://keystone.openstack.svc:5000/v3", "barbican_endpoint_type": "internal",
			"send_service_user_token": "true", "barbican_region_name": "RegionOne",
			"barbican_endpoint": "http://barbican.openstack.svc:9311",
		},
	}
	for sec, opts := range want {
		if !mapsEqual(got[sec], opts) {
			t.Errorf("[%s] = %v, want %v", sec, got[sec], opts)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d sections, want %d", len(got), len(want))
	}
}

func TestOptionalLinesFollowInputs(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*ContractInput)
		present []string
		absent  []string
	}{
		{
			name:   "no region writes no region lines",
			mutate: func(in *ContractInput) { in.Region = "" },
			absent: []string{
				"keystone_authtoken/region_name", "placement/region_name", "neutron/region_name",
				"glance/region_name", "cinder/os_region_name", "barbican/barbican_region_name",
			},
		},
		{
			name: "no overrides writes no pinned endpoints",
			mutate: func(in *ContractInput) {
				in.PlacementOverride, in.NeutronOverride, in.GlanceOverride = "", "", ""
				in.Cinder.Override, in.Barbican.Override = "", ""
			},
			absent: []string{
				"placement/endpoint_override", "neutron/endpoint_override", "glance/endpoint_override",
				"cinder/endpoint_template", "barbican/barbican_endpoint",
			},
		},
		{
			name:    "console off writes enabled = false and no URL",
			mutate:  func(in *ContractInput) { in.ConsoleProxyEnabled = false },
			present: []string{"vnc/enabled=false"},
			absent:  []string{"vnc/novncproxy_base_url"},
		},
		{
			name:    "public Keystone falls back to the in-cluster one",
			mutate:  func(in *ContractInput) { in.KeystonePublicEndpoint = "" },
			present: []string{"keystone_authtoken/www_authenticate_uri=http://keystone.openstack.svc:5000/v3"},
		},
		{
			name:    "debug",
			mutate:  func(in *ContractInput) { in.Debug = true },
			present: []string{"DEFAULT/debug=true"},
		},
		{
			name:    "overrides of disabled services are ignored",
			mutate:  func(in *ContractInput) { in.Cinder.Enabled, in.Barbican.Enabled = false, false },
			present: []string{"glance/endpoint_override=http://glance.openstack.svc:9292"},
			absent:  []string{"cinder/endpoint_template", "key_manager/backend", "barbican/barbican_endpoint"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fullInput()
			tt.mutate(&in)
			data, err := RenderContract(in)
			if err != nil {
				t.Fatal(err)
			}
			got := parseINI(t, data[KeyConfig])
			for _, p := range tt.present {
				path, value, hasValue := strings.Cut(p, "=")
				sec, opt, _ := strings.Cut(path, "/")
				v, ok := got[sec][opt]
				if !ok || (hasValue && v != value) {
					t.Errorf("%s = %q (present %v), want %q", path, v, ok, value)
				}
			}
			for _, a := range tt.absent {
				sec, opt, _ := strings.Cut(a, "/")
				if _, ok := got[sec][opt]; ok {
					t.Errorf("%s is present", a)
				}
			}
		})
	}
}

// TestRemoteDifferences compares the two forms option by option: only the
// options the remote table lists may differ, and they must differ as listed.
func TestRemoteDifferences(t *testing.T) {
	local, remote := renderBoth(t, fullInput())
	l, r := parseINI(t, local[KeyConfig]), parseINI(t, remote[KeyConfig])
	const remoteKeystone = "https://keystone.example.test/v3"
	wantRemote := map[string]string{
		"keystone_authtoken/auth_url":     remoteKeystone,
		"service_user/auth_url":           remoteKeystone,
		"placement/auth_url":              remoteKeystone,
		"neutron/auth_url":                remoteKeystone,
		"cinder/auth_url":                 remoteKeystone,
		"barbican/auth_endpoint":          remoteKeystone,
		"placement/valid_interfaces":      "public",
		"neutron/valid_interfaces":        "public",
		"glance/valid_interfaces":         "public",
		"cinder/catalog_info":             "block-storage:cinder:publicURL",
		"barbican/barbican_endpoint_type": "public",
	}
	omitted := map[string]bool{
		"placement/endpoint_override": true, "neutron/endpoint_override": true,
		"glance/endpoint_override": true, "cinder/endpoint_template": true,
		"barbican/barbican_endpoint": true,
	}
	for sec, opts := range l {
		for opt, lv := range opts {
			path := sec + "/" + opt
			rv, ok := r[sec][opt]
			switch {
			case omitted[path]:
				if ok {
					t.Errorf("remote keeps %s", path)
				}
			case wantRemote[path] != "":
				if rv != wantRemote[path] {
					t.Errorf("remote %s = %q, want %q", path, rv, wantRemote[path])
				}
			case rv != lv:
				t.Errorf("remote %s = %q, want it unchanged (%q)", path, rv, lv)
			}
		}
	}
	for sec, opts := range r {
		for opt := range opts {
			if _, ok := l[sec][opt]; !ok {
				t.Errorf("remote adds %s/%s", sec, opt)
			}
		}
	}
	for _, k := range []string{KeyPassword, KeyMetadataSecret, KeyCellName, KeyCABundle} {
		if !bytes.Equal(local[k], remote[k]) {
			t.Errorf("key %s differs between the forms", k)
		}
	}
}

func TestMissingInputs(t *testing.T) {
	tests := []struct {
		input  string
		mutate func(*ContractInput, *RemoteInput)
		local  bool // whether the in-cluster form fails too
	}{
		{"ContractInput.KeystoneEndpoint", func(in *ContractInput, _ *RemoteInput) { in.KeystoneEndpoint = "" }, true},
		{"ContractInput.ServiceUser.Username", func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.Username = "" }, true},
		{"ContractInput.ServiceUser.ProjectName", func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.ProjectName = "" }, true},
		{"ContractInput.ServiceUser.UserDomainName", func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.UserDomainName = "" }, true},
		{"ContractInput.ServiceUser.ProjectDomainName", func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.ProjectDomainName = "" }, true},
		{"ContractInput.Password", func(in *ContractInput, _ *RemoteInput) { in.Password = "" }, true},
		{"ContractInput.TransportURL", func(in *ContractInput, _ *RemoteInput) { in.TransportURL = "" }, true},
		{"ContractInput.MetadataSharedSecret", func(in *ContractInput, _ *RemoteInput) { in.MetadataSharedSecret = "" }, true},
		{"ContractInput.CellName", func(in *ContractInput, _ *RemoteInput) { in.CellName = "" }, true},
		{"ContractInput.NoVNCProxyBaseURL", func(in *ContractInput, _ *RemoteInput) { in.NoVNCProxyBaseURL = "" }, true},
		{"RemoteInput.KeystoneEndpoint", func(_ *ContractInput, r *RemoteInput) { r.KeystoneEndpoint = "" }, false},
		{"RemoteInput.TransportURL", func(_ *ContractInput, r *RemoteInput) { r.TransportURL = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			in, remote := fullInput(), testRemote
			tt.mutate(&in, &remote)
			check := func(form string, data map[string][]byte, err error) {
				var m *MissingInputError
				if !errors.As(err, &m) || m.Input != tt.input {
					t.Fatalf("%s error = %v, want missing %s", form, err, tt.input)
				}
				if data != nil {
					t.Errorf("%s returned data with the error", form)
				}
			}
			if tt.local {
				data, err := RenderContract(in)
				check("RenderContract", data, err)
			}
			// The remote form does not read the in-cluster transport URL.
			if tt.input != "ContractInput.TransportURL" {
				data, err := RenderRemoteContract(in, remote)
				check("RenderRemoteContract", data, err)
			}
		})
	}
}

// TestControlCharactersByInput feeds a control character through every
// string input and checks which section is named: the first, in name order,
// of the sections that carry or consume that input.
func TestControlCharactersByInput(t *testing.T) {
	const bad = "x\ny"
	tests := []struct {
		name        string
		base        func() ContractInput
		mutate      func(*ContractInput, *RemoteInput)
		local, want string // want is the remote answer; "" = same as local
	}{
		{"password", plaintextInput, func(in *ContractInput, _ *RemoteInput) { in.Password += bad }, "keystone_authtoken", ""},
		{"password with cinder", fullInput, func(in *ContractInput, _ *RemoteInput) { in.Password += bad }, "cinder", ""},
		{"metadata secret", fullInput, func(in *ContractInput, _ *RemoteInput) { in.MetadataSharedSecret += bad }, "neutron", ""},
		{"cell name", fullInput, func(in *ContractInput, _ *RemoteInput) { in.CellName += bad }, "DEFAULT", ""},
		{"transport URL", fullInput, func(in *ContractInput, _ *RemoteInput) { in.TransportURL += bad }, "DEFAULT", "-"},
		{"remote transport URL", fullInput, func(_ *ContractInput, r *RemoteInput) { r.TransportURL += bad }, "-", "DEFAULT"},
		{"keystone endpoint", fullInput, func(in *ContractInput, _ *RemoteInput) { in.KeystoneEndpoint += bad }, "barbican", "-"},
		{"keystone endpoint, no barbican", plaintextInput, func(in *ContractInput, _ *RemoteInput) { in.KeystoneEndpoint += bad }, "keystone_authtoken", "-"},
		// Without a public Keystone the remote www_authenticate_uri falls
		// back to the in-cluster URL, so the remote form reads it too.
		{"keystone endpoint as fallback", func() ContractInput { in := plaintextInput(); in.KeystonePublicEndpoint = ""; return in },
			func(in *ContractInput, _ *RemoteInput) { in.KeystoneEndpoint += bad }, "keystone_authtoken", ""},
		{"remote keystone endpoint", fullInput, func(_ *ContractInput, r *RemoteInput) { r.KeystoneEndpoint += bad }, "-", "barbican"},
		{"public keystone", fullInput, func(in *ContractInput, _ *RemoteInput) { in.KeystonePublicEndpoint += bad }, "keystone_authtoken", ""},
		{"region", fullInput, func(in *ContractInput, _ *RemoteInput) { in.Region += bad }, "barbican", ""},
		{"region, no optional services", plaintextInput, func(in *ContractInput, _ *RemoteInput) { in.Region += bad }, "glance", ""},
		{"username", fullInput, func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.Username += bad }, "cinder", ""},
		{"project name", plaintextInput, func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.ProjectName += bad }, "keystone_authtoken", ""},
		{"user domain", plaintextInput, func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.UserDomainName += bad }, "keystone_authtoken", ""},
		{"project domain", plaintextInput, func(in *ContractInput, _ *RemoteInput) { in.ServiceUser.ProjectDomainName += bad }, "keystone_authtoken", ""},
		{"placement override", fullInput, func(in *ContractInput, _ *RemoteInput) { in.PlacementOverride += bad }, "placement", "-"},
		{"neutron override", fullInput, func(in *ContractInput, _ *RemoteInput) { in.NeutronOverride += bad }, "neutron", "-"},
		{"glance override", fullInput, func(in *ContractInput, _ *RemoteInput) { in.GlanceOverride += bad }, "glance", "-"},
		{"cinder override", fullInput, func(in *ContractInput, _ *RemoteInput) { in.Cinder.Override += bad }, "cinder", "-"},
		{"barbican override", fullInput, func(in *ContractInput, _ *RemoteInput) { in.Barbican.Override += bad }, "barbican", "-"},
		{"console URL", fullInput, func(in *ContractInput, _ *RemoteInput) { in.NoVNCProxyBaseURL += bad }, "vnc", ""},
		{
			"several inputs at once", fullInput,
			func(in *ContractInput, _ *RemoteInput) { in.NoVNCProxyBaseURL += bad; in.MetadataSharedSecret += bad },
			"neutron", "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, form := range []string{"in-cluster", "remote"} {
				want := tt.local
				if form == "remote" && tt.want != "" {
					want = tt.want
				}
				in, remote := tt.base(), testRemote
				tt.mutate(&in, &remote)
				var (
					data map[string][]byte
					err  error
				)
				if form == "in-cluster" {
					data, err = RenderContract(in)
				} else {
					data, err = RenderRemoteContract(in, remote)
				}
				// "-" marks a form that does not read the input at all.
				if want == "-" {
					if err != nil {
						t.Errorf("%s: error = %v, want none: the input is not used", form, err)
					}
					continue
				}
				var u *UnsafeValueError
				if !errors.As(err, &u) || u.Section != want {
					t.Errorf("%s: error = %v, want section %q", form, err, want)
					continue
				}
				if data != nil {
					t.Errorf("%s: data returned alongside the error", form)
				}
				if msg := err.Error(); msg != fmt.Sprintf("section [%s] contains a control character", want) {
					t.Errorf("%s: message = %q", form, msg)
				}
			}
		})
	}
}

func TestControlCharacterKindsInCredentials(t *testing.T) {
	for _, c := range controlChars {
		in := plaintextInput()
		in.Password = "pw" + c + "pw"
		_, err := RenderContract(in)
		var u *UnsafeValueError
		if !errors.As(err, &u) || u.Section != "keystone_authtoken" {
			t.Errorf("password with %q: error = %v", c, err)
		}
	}
	// The CA bundle is PEM and spans lines; it is not an INI value.
	if _, err := RenderContract(tlsInput()); err != nil {
		t.Errorf("multi-line CA bundle refused: %v", err)
	}
}

func TestCheckTransportURL(t *testing.T) {
	const pw = "Sup3rS3cret"
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{"rabbit", "rabbit://nova:" + pw + "@rabbitmq:5672/", ""},
		{"rabbit with vhost and TLS port", "rabbit://nova:" + pw + "@198.51.100.10:5671/nova", ""},
		{"rabbit with several hosts", "rabbit://u:" + pw + "@h1:5672,u:" + pw + "@h2:5672/", ""},
		{"upper-case scheme is normalised", "RABBIT://nova:" + pw + "@rabbitmq:5672/", ""},
		{"amqp", "amqp://nova:" + pw + "@rabbitmq:5672/", `transport URL scheme "amqp" is not rabbit`},
		{"http", "http://nova:" + pw + "@rabbitmq:15672/", `transport URL scheme "http" is not rabbit`},
		{"kombu", "kombu://nova:" + pw + "@rabbitmq/", `transport URL scheme "kombu" is not rabbit`},
		{"no scheme", "nova:" + pw + "@rabbitmq:5672", `transport URL scheme "nova" is not rabbit`},
		{"bare word", pw, "transport URL has no scheme; want rabbit"},
		{"empty", "", "transport URL has no scheme; want rabbit"},
		{"garbage", "::" + pw, "transport URL cannot be parsed as a URL"},
		{"bad escape", "rabbit://nova:%zz" + pw + "@rabbitmq/", "transport URL cannot be parsed as a URL"},
		{"control character", "rabbit://nova:" + pw + "\n@rabbitmq/", "transport URL cannot be parsed as a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTransportURL(tt.raw)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckTransportURL() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("CheckTransportURL() = %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), pw) || (tt.raw != "" && strings.Contains(err.Error(), tt.raw)) {
				t.Errorf("message %q leaks the URL", err)
			}
		})
	}
}

func TestRenderRefusesNonRabbitTransport(t *testing.T) {
	in := fullInput()
	in.TransportURL = "amqp://nova:" + testPassword + "@rabbitmq:5672/"
	data, err := RenderContract(in)
	if err == nil || data != nil {
		t.Fatalf("RenderContract() = %v, %v; want an error and no data", data, err)
	}
	if want := `ContractInput.TransportURL: transport URL scheme "amqp" is not rabbit`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	remote := testRemote
	remote.TransportURL = "https://nova:" + testPassword + "@broker.example.test/"
	_, err = RenderRemoteContract(fullInput(), remote)
	if want := `RemoteInput.TransportURL: transport URL scheme "https" is not rabbit`; err == nil || err.Error() != want {
		t.Errorf("remote error = %v, want %q", err, want)
	}
}

func TestHash(t *testing.T) {
	base := map[string][]byte{"b": []byte("2"), "a": []byte("1")}
	// The definition, spelled out: sorted keys, "key=value\n" each.
	if got, want := Hash(base), sha256Hex("a=1\nb=2\n"); got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}
	if got, want := Hash(map[string][]byte{}), sha256Hex(""); got != want {
		t.Errorf("Hash(empty) = %s, want %s", got, want)
	}
	if Hash(base) != Hash(map[string][]byte{"a": []byte("1"), "b": []byte("2")}) {
		t.Error("Hash depends on map construction order")
	}
	changes := []struct {
		name string
		data map[string][]byte
	}{
		{"value changed", map[string][]byte{"a": []byte("1"), "b": []byte("3")}},
		{"key renamed", map[string][]byte{"a": []byte("1"), "c": []byte("2")}},
		{"key added", map[string][]byte{"a": []byte("1"), "b": []byte("2"), "c": nil}},
		{"key removed", map[string][]byte{"a": []byte("1")}},
		{"empty value", map[string][]byte{"a": []byte("1"), "b": {}}},
	}
	for _, c := range changes {
		if Hash(c.data) == Hash(base) {
			t.Errorf("%s: hash did not change", c.name)
		}
	}
	// A contract: every key change moves the hash.
	data, err := RenderContract(tlsInput())
	if err != nil {
		t.Fatal(err)
	}
	h := Hash(data)
	if len(h) != 64 {
		t.Errorf("Hash() = %q, want 64 hex digits", h)
	}
	for k := range data {
		changed := map[string][]byte{}
		for k2, v := range data {
			changed[k2] = v
		}
		changed[k] = append(slices.Clone(data[k]), 'x')
		if Hash(changed) == h {
			t.Errorf("changing %s did not change the hash", k)
		}
	}
}
