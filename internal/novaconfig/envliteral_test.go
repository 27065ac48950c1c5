package novaconfig

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dollarPassword spells '$' every way oslo.config treats specially: a
// doubled one, a bare name, a braced group option and a trailing one.
const dollarPassword = "Pa$$w0rd$HOST${DEFAULT.host}$"

// dollarURL carries dollarPassword as the broker password, its '$'
// unencoded as a user may hand it over; the braces are percent-encoded,
// because a URL's userinfo may not hold them and oslo.messaging unquotes it.
const dollarURL = "rabbit://nova:Pa$$w0rd$HOST$%7BDEFAULT.host%7D$@rabbitmq.openstack.svc:5672/"

func TestEnvLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"":              "",
		"plain":         "plain",
		"$":             "$$",
		dollarPassword:  "Pa$$$$w0rd$$HOST$${DEFAULT.host}$$",
		` "quoted" `:    ` "quoted" `,
		`back\slash $x`: `back\slash $$x`,
	} {
		if got := EnvLiteral(in); got != want {
			t.Errorf("EnvLiteral(%q) = %q, want %q", in, got, want)
		}
	}
}

// The pool hands password and transport_url to nova-compute as OS_
// variables, which oslo.config expands; both forms of the contract must
// carry them spelled for that, and leave the keys no OS_ variable reads.
func TestContractCredentialsAreEnvLiterals(t *testing.T) {
	in := fullInput()
	in.Password, in.TransportURL, in.MetadataSharedSecret = dollarPassword, dollarURL, "meta$secret"
	remote := testRemote
	remote.TransportURL = strings.Replace(dollarURL, "rabbitmq.openstack.svc", "198.51.100.10", 1)
	local, err := RenderContract(in)
	if err != nil {
		t.Fatal(err)
	}
	remoteData, err := RenderRemoteContract(in, remote)
	if err != nil {
		t.Fatal(err)
	}
	for form, c := range map[string]struct {
		data map[string][]byte
		url  string
	}{"in-cluster": {local, in.TransportURL}, "remote": {remoteData, remote.TransportURL}} {
		if string(c.data[KeyPassword]) != EnvLiteral(dollarPassword) {
			t.Errorf("%s: the password key is not spelled for oslo.config", form)
		}
		if string(c.data[KeyTransportURL]) != EnvLiteral(c.url) {
			t.Errorf("%s: the transport_url key is not spelled for oslo.config", form)
		}
		if string(c.data[KeyMetadataSecret]) != "meta$secret" {
			t.Errorf("%s: the metadata secret changed; nova-compute does not read it", form)
		}
	}
}

func TestContractRefusesBackslashDollarInCredentials(t *testing.T) {
	const secret = `pw\$x`
	tests := []struct {
		name   string
		mutate func(*ContractInput, *RemoteInput)
		local  string
		remote string // "-" when the form does not read the input
	}{
		{"password", func(in *ContractInput, _ *RemoteInput) { in.Password = secret }, "keystone_authtoken", "keystone_authtoken"},
		{"transport URL", func(in *ContractInput, _ *RemoteInput) { in.TransportURL = "rabbit://nova:" + secret + "@h/" }, "DEFAULT", "-"},
		{"remote transport URL", func(_ *ContractInput, r *RemoteInput) { r.TransportURL = "rabbit://nova:" + secret + "@h/" }, "-", "DEFAULT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, remote := fullInput(), testRemote
			tt.mutate(&in, &remote)
			for form, want := range map[string]string{"in-cluster": tt.local, "remote": tt.remote} {
				var (
					data map[string][]byte
					err  error
				)
				if form == "in-cluster" {
					data, err = RenderContract(in)
				} else {
					data, err = RenderRemoteContract(in, remote)
				}
				if want == "-" {
					if err != nil {
						t.Errorf("%s: error = %v, want none: the input is not used", form, err)
					}
					continue
				}
				var u *UnsafeValueError
				if !errors.As(err, &u) || u.Section != want || u.Reason != BackslashDollar || data != nil {
					t.Errorf("%s: error = %v, want BackslashDollar in [%s] and no data", form, err, want)
					continue
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%s: the message leaks the value", form)
				}
			}
		})
	}
}

// envReadScript has oslo.config read the contract's two credentials from
// the OS_ variables the pool sets, and oslo.messaging parse the URL, as
// nova-compute does; it prints whether each arrived as the input, never a
// value.
const envReadScript = `
import json, os, sys
from oslo_config import cfg
import oslo_messaging
conf = cfg.ConfigOpts()
conf.register_opt(cfg.StrOpt("host", default="node-1"))
conf.register_opt(cfg.StrOpt("password", secret=True), group="keystone_authtoken")
conf([], project="nova", default_config_files=[], default_config_dirs=[])
# Without a URL, parse registers transport_url and reads it from conf.
url = oslo_messaging.TransportURL.parse(conf)
json.dump({
    "password": conf.keystone_authtoken.password == os.environ["WANT_PASSWORD"],
    "transport_url": conf.transport_url == os.environ["WANT_URL"],
    "bus_password": url.hosts[0].password == os.environ["WANT_PASSWORD"],
}, sys.stdout)
`

// TestIntegrationOsloConfigReadsContractEnv proves EnvLiteral against the
// readers that count: oslo.config's environment source and oslo.messaging's
// URL parser, with the values the contract publishes.
func TestIntegrationOsloConfigReadsContractEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo.config")
	}
	if err := exec.Command(hostPython, "-c", "import oslo_config, oslo_messaging").Run(); err != nil {
		t.Skipf("%s lacks oslo.config or oslo.messaging (apt-get install python3-nova): %v", hostPython, err)
	}
	in := plaintextInput()
	in.Password, in.TransportURL = dollarPassword, dollarURL
	data, err := RenderContract(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hostPython, "-c", envReadScript)
	cmd.Env = append(os.Environ(),
		"OS_KEYSTONE_AUTHTOKEN__PASSWORD="+string(data[KeyPassword]),
		"OS_DEFAULT__TRANSPORT_URL="+string(data[KeyTransportURL]),
		"WANT_PASSWORD="+dollarPassword, "WANT_URL="+dollarURL)
	raw, err := cmd.Output()
	if err != nil {
		// The traceback could quote a value; report only that it failed.
		t.Fatalf("oslo.config could not read the contract's variables: %v", err)
	}
	var got map[string]bool
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"password", "transport_url", "bus_password"} {
		if !got[k] {
			t.Errorf("%s does not arrive intact through oslo.config", k)
		}
	}
}

// TestIntegrationOsloConfigReadsContractFragment pins review §12's other
// half: a region or console URL with '$' is written literally, so it can
// neither break the fragment nor pull the bus URL into a logged message.
func TestIntegrationOsloConfigReadsContractFragment(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo.config")
	}
	in := fullInput()
	in.Region = "${DEFAULT.transport_url}"
	in.NoVNCProxyBaseURL = "https://console.example.test/$HOST/vnc_lite.html"
	data, err := RenderContract(in)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyConfig), data[KeyConfig], 0o600); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"keystone_authtoken/region_name": in.Region,
		"placement/region_name":          in.Region,
		"vnc/novncproxy_base_url":        in.NoVNCProxyBaseURL,
	}
	got := osloReadDir(t, dir, slices.Sorted(maps.Keys(want)))
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: oslo.config read %q, want %q", path, got[path], w)
		}
	}
}
