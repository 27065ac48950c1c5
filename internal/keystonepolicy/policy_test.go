package keystonepolicy

import (
	"slices"
	"strings"
	"testing"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestCheck(t *testing.T) {
	nova := func(internal, public, remote string) *novav1alpha1.Nova {
		n := &novav1alpha1.Nova{}
		n.Spec.KeystoneEndpoint, n.Spec.KeystonePublicEndpoint = internal, public
		if remote != "" {
			n.Spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{KeystoneEndpoint: remote}
		}
		return n
	}
	cp := &c5c3v1alpha1.ControlPlane{}
	cp.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{
		InternalEndpoint: "http://keystone.openstack.svc:5000/v3", Gateway: &c5c3v1alpha1.GatewaySpec{Hostname: "Keystone.Example.com"},
	}
	allow := func(hosts ...string) Policy { return Policy{AllowedHosts: hosts} }
	tests := []struct {
		name   string
		policy Policy
		nova   *novav1alpha1.Nova
		cp     *c5c3v1alpha1.ControlPlane
		want   []string // refused fields; none means admitted
	}{
		{name: "a standalone Nova without an allowlist", nova: nova("http://keystone.openstack.svc:5000", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "a host on the allowlist, any port", policy: allow("keystone.openstack.svc"), nova: nova("http://keystone.openstack.svc:5000", "", "")},
		{name: "a host:port on the allowlist", policy: allow("keystone.openstack.svc:5000"), nova: nova("http://keystone.openstack.svc:5000/v3", "", "")},
		{name: "another port of a host:port entry", policy: allow("127.0.0.1:5000"), nova: nova("http://127.0.0.1:40123/v3", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "the scheme's default port", policy: allow("keystone.example.com:443"), nova: nova("https://keystone.example.com/v3", "", "")},
		{name: "case and a trailing dot", policy: allow("KEYSTONE.example.com."), nova: nova("https://keystone.EXAMPLE.com/v3", "", "")},
		{name: "a look-alike host", policy: allow("keystone.example.com"), nova: nova("https://keystone.example.com.evil.example/v3", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "user info that names an allowed host", policy: allow("keystone.example.com"), nova: nova("https://keystone.example.com@evil.example/v3", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "every field is checked", policy: allow("keystone.openstack.svc"), nova: nova("http://keystone.openstack.svc:5000", "https://evil.example", "https://evil.example"),
			want: []string{"spec.keystonePublicEndpoint", "spec.remoteCompute.keystoneEndpoint"}},
		{name: "not a URL", policy: allow("keystone"), nova: nova("keystone:5000", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "the ControlPlane's Keystone", cp: cp, nova: nova("http://keystone.openstack.svc:5000/v3", "https://keystone.example.com/v3", "https://keystone.example.com/v3")},
		{name: "the ControlPlane's host on another port", cp: cp, nova: nova("http://keystone.openstack.svc:6000/v3", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "a ControlPlane child elsewhere", cp: cp, nova: nova("http://evil.example:5000/v3", "", ""), want: []string{"spec.keystoneEndpoint"}},
		{name: "a ControlPlane child on the allowlist", cp: cp, policy: allow("evil.example"), nova: nova("http://evil.example:5000/v3", "", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.policy.Check(tt.nova, tt.cp)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				if !strings.Contains(e.Detail, "service password") {
					t.Errorf("%s: detail %q does not say why", e.Field, e.Detail)
				}
				if strings.Contains(e.Detail, "@") {
					t.Errorf("%s: detail %q echoes user info", e.Field, e.Detail)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("refused %v, want %v (%v)", got, tt.want, errs)
			}
		})
	}
}

func TestValidateHosts(t *testing.T) {
	for entry, ok := range map[string]bool{
		"keystone.example.com": true, "keystone.example.com:5000": true, "127.0.0.1:5000": true, "::1": true, "[::1]:5000": true,
		"https://keystone.example.com": false, "keystone.example.com/v3": false, "keystone:0": false, "keystone:http": false, "": false,
		"http://keystone.openstack.svc:5000": true, "http://127.0.0.1": true, "http://keystone/v3": false, "http://": false,
	} {
		if err := ValidateHosts([]string{entry}); (err == nil) != ok {
			t.Errorf("ValidateHosts(%q) = %v, want ok %v", entry, err, ok)
		}
	}
}

func TestCheckControlPlane(t *testing.T) {
	cp := func(internal, public, gateway string) *c5c3v1alpha1.ControlPlane {
		c := &c5c3v1alpha1.ControlPlane{}
		c.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: internal, PublicEndpoint: public}
		if gateway != "" {
			c.Spec.Services.Keystone.Gateway = &c5c3v1alpha1.GatewaySpec{Hostname: gateway}
		}
		return c
	}
	allow := func(hosts ...string) Policy { return Policy{AllowedHosts: hosts} }
	const (
		internal = "spec.services.keystone.internalEndpoint"
		public   = "spec.services.keystone.publicEndpoint"
		gateway  = "spec.services.keystone.gateway.hostname"
	)
	tests := []struct {
		name   string
		policy Policy
		cp     *c5c3v1alpha1.ControlPlane
		want   []string // refused fields; none means admitted
	}{
		{name: "no Keystone", cp: &c5c3v1alpha1.ControlPlane{}},
		{name: "an empty allowlist admits nothing", cp: cp("https://keystone.example.com/v3", "", ""), want: []string{internal}},
		{name: "https on an allowed host", policy: allow("keystone.example.com"), cp: cp("https://keystone.example.com/v3", "", "")},
		{name: "plain http on a host allowed for https only", policy: allow("keystone.openstack.svc:5000"),
			cp: cp("http://keystone.openstack.svc:5000/v3", "", ""), want: []string{internal}},
		{name: "plain http on a host allowed with http://", policy: allow("http://keystone.openstack.svc:5000"),
			cp: cp("http://keystone.openstack.svc:5000/v3", "", "")},
		{name: "an http:// entry admits its port only", policy: allow("http://keystone.openstack.svc:5000"),
			cp: cp("http://keystone.openstack.svc:6000/v3", "", ""), want: []string{internal}},
		{name: "an http:// entry admits https too", policy: allow("http://keystone.example.com:443"), cp: cp("https://keystone.example.com/v3", "", "")},
		{name: "the public endpoint outside the allowlist", policy: allow("http://keystone.openstack.svc:5000"),
			cp: cp("http://keystone.openstack.svc:5000/v3", "https://evil.example/v3", ""), want: []string{public}},
		{name: "the gateway's hostname, on 443", policy: allow("http://keystone.openstack.svc:5000", "id.example.com:443"),
			cp: cp("http://keystone.openstack.svc:5000/v3", "", "id.example.com")},
		{name: "the gateway's hostname outside the allowlist", policy: allow("http://keystone.openstack.svc:5000"),
			cp: cp("http://keystone.openstack.svc:5000/v3", "", "id.example.com"), want: []string{gateway}},
		{name: "user info that names an allowed host", policy: allow("keystone.example.com"),
			cp: cp("https://keystone.example.com@evil.example/v3", "", ""), want: []string{internal}},
		{name: "not a URL", policy: allow("keystone"), cp: cp("keystone:5000", "", ""), want: []string{internal}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range tt.policy.CheckControlPlane(tt.cp) {
				got = append(got, e.Field)
				if !strings.Contains(e.Detail, "admin password") {
					t.Errorf("%s: detail %q does not say why", e.Field, e.Detail)
				}
				if strings.Contains(e.Detail, "@") || strings.Contains(e.Detail, "/v3") {
					t.Errorf("%s: detail %q echoes the URL", e.Field, e.Detail)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("refused %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEntryFor(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{"https://keystone.example.com/v3", "keystone.example.com:443", true},
		{"http://127.0.0.1:15500/v3", "http://127.0.0.1:15500", true},
		{"http://Keystone.openstack.svc./v3", "http://keystone.openstack.svc:80", true},
		{"https://[::1]:5000", "[::1]:5000", true},
		{"keystone:5000", "", false},
		{"ftp://keystone", "", false},
	}
	for _, tt := range tests {
		got, ok := EntryFor(tt.raw)
		if got != tt.want || ok != tt.ok {
			t.Errorf("EntryFor(%q) = %q, %t, want %q, %t", tt.raw, got, ok, tt.want, tt.ok)
		}
		if ok {
			if err := ValidateHosts([]string{got}); err != nil {
				t.Errorf("EntryFor(%q) = %q, which ValidateHosts refuses: %v", tt.raw, got, err)
			}
			cp := &c5c3v1alpha1.ControlPlane{}
			cp.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: tt.raw}
			if errs := (Policy{AllowedHosts: []string{got}}).CheckControlPlane(cp); len(errs) > 0 {
				t.Errorf("the entry %q does not admit %q: %v", got, tt.raw, errs)
			}
		}
	}
}

func TestEntriesFor(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		want []string
		ok   bool
	}{
		{"internal and public", []string{"http://127.0.0.1:5000/v3", "https://keystone.example.com/v3"}, []string{"http://127.0.0.1:5000", "keystone.example.com:443"}, true},
		{"one host twice", []string{"https://k.example/v3", "https://K.example./identity"}, []string{"k.example:443"}, true},
		{"none", nil, nil, true},
		{"no host", []string{"https://k.example/v3", "keystone:5000"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EntriesFor(tt.urls...)
			if (err == nil) != tt.ok || !slices.Equal(got, tt.want) {
				t.Errorf("EntriesFor(%q) = %q, %v; want %q, ok %t", tt.urls, got, err, tt.want, tt.ok)
			}
		})
	}
}
