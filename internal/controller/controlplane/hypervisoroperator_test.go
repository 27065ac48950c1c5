package controlplane

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

func TestAdminCredentials(t *testing.T) {
	ks := &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://keystone.openstack.svc:5000/v3", Region: "RegionTwo"}
	tests := []struct {
		name       string
		data       map[string]string
		want       openstack.Credentials
		wantDomain string
		wantErr    bool
	}{
		{name: "no Secret data", wantErr: true},
		{name: "empty password", data: map[string]string{"password": "", "username": "root"}, wantErr: true},
		{
			name: "password only takes the defaults",
			data: map[string]string{"password": "admin-PASSWORD-1"},
			want: openstack.Credentials{AuthURL: ks.InternalEndpoint, Username: "admin", Password: "admin-PASSWORD-1", ProjectName: "admin",
				UserDomainName: "Default", ProjectDomainName: "Default", Region: "RegionTwo", Interface: "internal"},
			wantDomain: "Default",
		},
		{
			name: "every key set",
			data: map[string]string{"password": "p", "username": "cloud-admin", "project_name": "ops",
				"user_domain_name": "infra", "project_domain_name": "ops-domain"},
			want: openstack.Credentials{AuthURL: ks.InternalEndpoint, Username: "cloud-admin", Password: "p", ProjectName: "ops",
				UserDomainName: "infra", ProjectDomainName: "ops-domain", Region: "RegionTwo", Interface: "internal"},
			wantDomain: "infra",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tt.data {
				data[k] = []byte(v)
			}
			got, domain, err := AdminCredentials(ks, data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), "root") {
					t.Errorf("the error quotes a value: %v", err)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) || domain != tt.wantDomain {
				t.Errorf("got %+v in %q, want %+v in %q", got, domain, tt.want, tt.wantDomain)
			}
		})
	}
}

func TestBuildHypervisorOperatorAuth(t *testing.T) {
	keys := []string{"auth_url", "password", "project_domain_name", "project_name", "region_name", "user_domain_name", "username"}
	tests := []struct {
		name   string
		ks     c5c3v1alpha1.KeystoneSpec
		domain string
		want   map[string]string
	}{
		{
			name:   "unpublished Keystone, no region: the internal URL and RegionOne",
			ks:     c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://keystone.openstack.svc:5000/v3"},
			domain: "Default",
			want: map[string]string{"auth_url": "http://keystone.openstack.svc:5000/v3", "username": "hypervisor-operator",
				"user_domain_name": "Default", "project_name": "service-hypervisor-operator", "project_domain_name": "Default",
				"region_name": "RegionOne", "password": "pw"},
		},
		{
			name:   "public endpoint and region",
			ks:     c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://k:5000/v3", PublicEndpoint: "https://keystone.example.com/v3", Region: "eu-1"},
			domain: "infra",
			want: map[string]string{"auth_url": "https://keystone.example.com/v3", "username": "hypervisor-operator",
				"user_domain_name": "infra", "project_name": "service-hypervisor-operator", "project_domain_name": "infra",
				"region_name": "eu-1", "password": "pw"},
		},
		{
			name:   "Keystone on a gateway",
			ks:     c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://k:5000/v3", Gateway: &c5c3v1alpha1.GatewaySpec{Hostname: "id.example.com"}},
			domain: "Default",
			want: map[string]string{"auth_url": "https://id.example.com/v3", "username": "hypervisor-operator",
				"user_domain_name": "Default", "project_name": "service-hypervisor-operator", "project_domain_name": "Default",
				"region_name": "RegionOne", "password": "pw"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := minimalControlPlane()
			cp.Spec.Services.Keystone = &tt.ks
			got := BuildHypervisorOperatorAuth(cp, tt.domain, "pw")
			if k := slices.Sorted(maps.Keys(got)); !slices.Equal(k, keys) {
				t.Fatalf("keys = %v, want exactly %v", k, keys)
			}
			for k, v := range tt.want {
				if string(got[k]) != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestAccountDescriptionNamesTheControlPlane(t *testing.T) {
	a, b := minimalControlPlane(), minimalControlPlane()
	b.Namespace = "other"
	if AccountDescription(a) == AccountDescription(b) {
		t.Error("two ControlPlanes of one name in different namespaces share a mark")
	}
}

func TestRenderForCluster(t *testing.T) {
	fragment := "[keystone_authtoken]\nauth_url = https://k/v3\nusername = nova\n\n[placement]\nusername = nova\nvalid_interfaces = public\n\n[glance]\nvalid_interfaces = public\n"
	data := map[string][]byte{"nova-compute.conf": []byte(fragment), "password": []byte("shared"), "transport_url": []byte("rabbit://u:p@h:5671/"), "cell_name": []byte("cell1")}
	tests := []struct {
		name, user, password string
		data                 map[string][]byte
		wantErr              bool
		wantFragment         string
	}{
		{name: "every username line and the password", user: "nova-compute-a", password: "own-PASSWORD", data: data,
			wantFragment: "[keystone_authtoken]\nauth_url = https://k/v3\nusername = nova-compute-a\n\n[placement]\nusername = nova-compute-a\nvalid_interfaces = public\n\n[glance]\nvalid_interfaces = public\n"},
		{name: "a newline in the password", user: "nova-compute-a", password: "x\n[DEFAULT]", data: data, wantErr: true},
		{name: "interpolation in the user", user: "nova-$(x)", password: "pw-XYZ", data: data, wantErr: true},
		{name: "empty password", user: "nova-compute-a", data: data, wantErr: true},
		{name: "a fragment without a user", user: "u", password: "pw-XYZ", data: map[string][]byte{"nova-compute.conf": []byte("[DEFAULT]\ndebug = false\n")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderForCluster(tt.data, tt.user, tt.password)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), tt.password) && tt.password != "" {
					t.Errorf("the error quotes the password: %v", err)
				}
				return
			}
			if string(got["nova-compute.conf"]) != tt.wantFragment || string(got["password"]) != tt.password {
				t.Errorf("fragment = %q, password = %q", got["nova-compute.conf"], got["password"])
			}
			if string(got["transport_url"]) != "rabbit://u:p@h:5671/" || string(got["cell_name"]) != "cell1" || len(got) != len(tt.data) {
				t.Errorf("the other keys changed: %v", slices.Sorted(maps.Keys(got)))
			}
			if string(tt.data["password"]) != "shared" || !strings.Contains(string(tt.data["nova-compute.conf"]), "username = nova\n") {
				t.Error("the source data was modified")
			}
		})
	}
}

func TestReissueToken(t *testing.T) {
	tests := []struct{ annotation, cluster, want string }{
		{"", "compute-a", ""},
		{"compute-a@1", "compute-a", "1"},
		{"compute-a@1", "compute-b", ""},
		{"compute-a", "compute-a", ""},
		{"compute-a@2026-12-01T10:00:00Z", "compute-a", "2026-12-01T10:00:00Z"},
	}
	for _, tt := range tests {
		cp := minimalControlPlane()
		cp.Annotations = map[string]string{c5c3v1alpha1.ReissueComputeCredentialsAnnotation: tt.annotation}
		if got := ReissueToken(cp, tt.cluster); got != tt.want {
			t.Errorf("ReissueToken(%q, %s) = %q, want %q", tt.annotation, tt.cluster, got, tt.want)
		}
	}
}

func TestOptsInToAuthCopy(t *testing.T) {
	label := c5c3v1alpha1.HypervisorOperatorCredentialsLabel
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "no labels", labels: nil, want: false},
		{name: "other labels only", labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}, want: false},
		{name: "true", labels: map[string]string{label: "true"}, want: true},
		{name: "false", labels: map[string]string{label: "false"}, want: false},
		{name: "empty", labels: map[string]string{label: ""}, want: false},
		{name: "another spelling of true", labels: map[string]string{label: "True"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OptsInToAuthCopy(tt.labels); got != tt.want {
				t.Errorf("OptsInToAuthCopy(%v) = %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
}

func TestDescribeDeliveries(t *testing.T) {
	label := c5c3v1alpha1.HypervisorOperatorCredentialsLabel
	tests := []struct {
		name     string
		targets  []string
		auth     bool
		withheld []string
		want     string
	}{
		{name: "no account", targets: []string{"a", "b"}, want: "its contract is on a, b"},
		{name: "copied everywhere", targets: []string{"a", "b"}, auth: true,
			want: "its contract and the hypervisor operator's auth Secret are on a, b"},
		{name: "withheld everywhere", targets: []string{"a", "b"}, auth: true, withheld: []string{"a", "b"},
			want: "its contract is on a, b; the hypervisor operator's auth Secret is withheld there (no " + label + "=true on the namespace)"},
		{name: "withheld from one", targets: []string{"a", "b", "c"}, auth: true, withheld: []string{"b"},
			want: "its contract is on a, b, c, and the hypervisor operator's auth Secret on a, c; withheld from b (no " + label + "=true on the namespace)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeDeliveries(tt.targets, tt.auth, tt.withheld); got != tt.want {
				t.Errorf("describeDeliveries() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestKeepClusterHypervisorOperators(t *testing.T) {
	targets := []string{"a", "b", "c"}
	tests := []struct {
		name              string
		wanted, delivered bool
		targets, withheld []string
		wantKeep          []string
		wantDecided       bool
	}{
		{name: "not wanted: every user goes", targets: targets, wantDecided: true},
		{name: "not wanted, even when delivered", delivered: true, targets: targets, wantDecided: true},
		{name: "wanted, not delivered in this pass: nothing is decided", wanted: true, targets: targets},
		{name: "wanted and delivered: every target keeps its user", wanted: true, delivered: true, targets: targets,
			wantKeep: targets, wantDecided: true},
		{name: "a target that withholds the copy loses its user", wanted: true, delivered: true, targets: targets,
			withheld: []string{"b"}, wantKeep: []string{"a", "c"}, wantDecided: true},
		{name: "no target left", wanted: true, delivered: true, wantDecided: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, decided := KeepClusterHypervisorOperators(tt.wanted, tt.delivered, tt.targets, tt.withheld)
			if decided != tt.wantDecided || !slices.Equal(keep, tt.wantKeep) {
				t.Errorf("KeepClusterHypervisorOperators = %v, %v; want %v, %v", keep, decided, tt.wantKeep, tt.wantDecided)
			}
		})
	}
}

func TestAuthForUser(t *testing.T) {
	cp := &c5c3v1alpha1.ControlPlane{}
	cp.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "https://keystone.openstack.svc:5000/v3"}
	shared := BuildHypervisorOperatorAuth(cp, "Default", "shared-password")
	got := AuthForUser(shared, "hypervisor-operator-compute-a", "own-password")
	if string(got[authUsernameKey]) != "hypervisor-operator-compute-a" || string(got[authPasswordKey]) != "own-password" {
		t.Errorf("the copy logs in as %s with another password than its own", got[authUsernameKey])
	}
	for _, k := range []string{authURLKey, authUserDomainKey, authProjectKey, authProjectDomainKey, authRegionKey} {
		if string(got[k]) != string(shared[k]) {
			t.Errorf("%s = %q, want the shared account's %q", k, got[k], shared[k])
		}
	}
	if len(got) != len(shared) {
		t.Errorf("the copy has %d keys, the shared Secret %d", len(got), len(shared))
	}
	if string(shared[authUsernameKey]) != c5c3v1alpha1.HypervisorOperatorUser || string(shared[authPasswordKey]) != "shared-password" {
		t.Error("AuthForUser changed the shared data")
	}
}
