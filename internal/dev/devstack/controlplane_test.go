package devstack

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
)

func TestSampleControlPlane(t *testing.T) {
	cp := sampleControlPlane(nil)
	if cp.Name != "controlplane" || cp.Namespace != "openstack" {
		t.Errorf("sample is %s/%s, want openstack/controlplane as the guides name it", cp.Namespace, cp.Name)
	}
	m := cp.Spec.Infrastructure.Messaging
	if m == nil || m.SecretRef.Name != BusSecret || m.TLS == nil || m.TLS.CABundleSecretRef.Name != BusCASecret {
		t.Fatalf("messaging = %+v, want the bus Secret and its CA bundle", m)
	}
	svc := cp.Spec.Services
	if svc.Keystone == nil || svc.Keystone.InternalEndpoint != "http://127.0.0.1:5000/v3" ||
		svc.Keystone.PublicEndpoint != "https://keystone.127-0-0-1.nip.io/v3" || svc.Keystone.Region != "RegionOne" {
		t.Errorf("keystone = %+v", svc.Keystone)
	}
	for name, s := range map[string]*c5c3v1alpha1.ReferencedService{"placement": svc.Placement, "neutron": &svc.Neutron.ReferencedService, "glance": svc.Glance} {
		if s == nil || !strings.HasPrefix(s.InternalEndpoint, "http://") || !strings.HasPrefix(s.PublicEndpoint, "https://") {
			t.Errorf("%s = %+v; remoteCompute needs an https public endpoint", name, s)
		}
	}
	n := svc.Nova
	if n == nil {
		t.Fatal("no nova")
	}
	if n.OpenStackRelease != "2026.1" || n.Image.Repository != "ghcr.io/c5c3/nova" || n.Image.Tag != "2026.1" || n.Image.Digest != "" {
		t.Errorf("nova release/image = %q %+v", n.OpenStackRelease, n.Image)
	}
	if n.ServiceUserSecretRef.Name != NovaPasswordSecret {
		t.Errorf("service user Secret = %q", n.ServiceUserSecretRef.Name)
	}
	// Step 1 of the guide adds remoteCompute; the sample must leave it to it.
	if n.RemoteCompute != nil {
		t.Error("the sample sets remoteCompute")
	}
	// The Nova runs its control plane only with both databases; without
	// the OpenStack services kwok simulates its pods and nothing opens them.
	if n.APIDatabase == nil || n.Database == nil || n.APIDatabase.Port != 3306 || n.Database.SecretName != NovaDBSecret {
		t.Errorf("the sample must declare both databases: %+v, %+v", n.APIDatabase, n.Database)
	}
	if n.HypervisorOperator != nil || svc.Keystone.AdminCredentialsSecretRef != nil {
		t.Error("the sample asks for the hypervisor operator's account without a Keystone to create it in")
	}
}

// With the OpenStack services, the sample points at their addresses: the
// https public Keystone that remoteCompute requires, and the catalog's
// endpoints for the other services.
func TestSampleControlPlaneOnLocalServices(t *testing.T) {
	cloud := &sampleCloud{
		keystone: "http://127.0.0.1:15500/v3", keystonePublic: "https://127.0.0.1:15501/v3", region: "RegionOne",
		placement: "http://127.0.0.1:18778", neutron: "http://127.0.0.1:19696", glance: "http://127.0.0.1:19292",
		mariaDBPort: 13306, novaDBPassword: "db-pw",
	}
	svc := sampleControlPlane(cloud).Spec.Services
	if svc.Keystone.InternalEndpoint != cloud.keystone || svc.Keystone.PublicEndpoint != cloud.keystonePublic || svc.Keystone.Region != "RegionOne" {
		t.Errorf("keystone = %+v", svc.Keystone)
	}
	for name, tt := range map[string]struct {
		got  *c5c3v1alpha1.ReferencedService
		want string
	}{"placement": {svc.Placement, cloud.placement}, "neutron": {&svc.Neutron.ReferencedService, cloud.neutron}, "glance": {svc.Glance, cloud.glance}} {
		if tt.got == nil || tt.got.InternalEndpoint != tt.want || tt.got.PublicEndpoint != tt.want {
			t.Errorf("%s = %+v, want %s", name, tt.got, tt.want)
		}
	}
	for name, tt := range map[string]struct {
		got  *c5c3v1alpha1.DatabaseSpec
		want string
	}{"apiDatabase": {svc.Nova.APIDatabase, "nova_api"}, "database": {svc.Nova.Database, "nova"}} {
		want := c5c3v1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: 13306, Database: tt.want, SecretName: NovaDBSecret}
		if tt.got == nil || *tt.got != want {
			t.Errorf("%s = %+v, want %+v", name, tt.got, want)
		}
	}
	// Guide step 2 starts from a sample that asks for the account.
	if svc.Nova.HypervisorOperator == nil || svc.Keystone.AdminCredentialsSecretRef == nil ||
		svc.Keystone.AdminCredentialsSecretRef.Name != KeystoneAdminSecret {
		t.Errorf("hypervisorOperator = %v, adminCredentialsSecretRef = %v", svc.Nova.HypervisorOperator, svc.Keystone.AdminCredentialsSecretRef)
	}
}

// writeServiceSet writes the state directory of a service set, as
// hack/openstack/openstack.sh leaves it, with the MariaDB port given.
func writeServiceSet(t *testing.T, mariaDBPort string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"secrets/keystone-nova": "svc-pw\n",
		"secrets/db-nova":       "db-pw-0e4c\n",
		"transport-tls":         "rabbit://nova:bus@127.0.0.1:15671/\n",
		"rabbit-ca.crt":         "-----BEGIN CERTIFICATE-----\n",
		"clouds.yaml":           "clouds:\n  anvil:\n    auth:\n      auth_url: http://127.0.0.1:15500/v3\n",
		"endpoints.env": strings.Join([]string{
			localcloud.KeystoneURL + "=http://127.0.0.1:15500/v3",
			localcloud.TransportURLTLSFile + "=" + filepath.Join(dir, "transport-tls"),
			localcloud.RabbitMQCA + "=" + filepath.Join(dir, "rabbit-ca.crt"),
			localcloud.MariaDBPort + "=" + mariaDBPort,
		}, "\n") + "\n",
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadSampleCloudDatabase(t *testing.T) {
	tests := []struct {
		name, port string
		wantPort   int32
		wantErr    bool
	}{
		{name: "port", port: "13306", wantPort: 13306},
		{name: "no port", port: "", wantErr: true},
		{name: "port out of range", port: "70000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ANVIL_OPENSTACK_DIR", writeServiceSet(t, tt.port))
			cloud, err := (&Stack{}).loadSampleCloud()
			if tt.wantErr {
				if err == nil {
					t.Fatal("loaded a service set without a valid MariaDB port")
				}
				if strings.Contains(err.Error(), "db-pw-0e4c") {
					t.Error("the error carries the database password")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cloud.mariaDBPort != tt.wantPort || cloud.novaDBPassword != "db-pw-0e4c" || cloud.novaPassword != "svc-pw" {
				t.Errorf("port %d, database password read: %v", cloud.mariaDBPort, cloud.novaDBPassword == "db-pw-0e4c")
			}
		})
	}
}

func TestRandomTokenAndBusURL(t *testing.T) {
	a, err := randomToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := randomToken()
	if a == b || len(a) != 43 {
		t.Errorf("tokens %d chars, equal: %v", len(a), a == b)
	}
	u, err := url.Parse(busURL(a))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if u.Scheme != "rabbit" || u.User.Username() != "nova" || pw != a || u.Host != "127.0.0.1:5671" {
		t.Errorf("bus URL parts: scheme %s user %s host %s, password kept: %v", u.Scheme, u.User.Username(), u.Host, pw == a)
	}
}

func TestSummarizeControlPlane(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"new", nil, "pending\tno conditions yet"},
		{"waiting", []metav1.Condition{cond("Ready", metav1.ConditionFalse, "WaitingForNova"), cond("NovaReady", metav1.ConditionFalse, "WaitingForNova")},
			"not ready\tReady=False (WaitingForNova), NovaReady=False (WaitingForNova)"},
		{"ready", []metav1.Condition{cond("NovaReady", metav1.ConditionTrue, "NovaReady"), cond("Ready", metav1.ConditionTrue, "Ready")},
			"ready\tReady=True (Ready), NovaReady=True (NovaReady)"},
		{"only NovaReady", []metav1.Condition{cond("NovaReady", metav1.ConditionFalse, "WaitingForMessaging")},
			"pending\tNovaReady=False (WaitingForMessaging)"},
	}
	for _, tt := range tests {
		if got := summarizeControlPlane(tt.conds); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
