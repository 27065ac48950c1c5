package devstack

import (
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
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
	for name, s := range map[string]*c5c3v1alpha1.ReferencedService{"placement": svc.Placement, "neutron": svc.Neutron, "glance": svc.Glance} {
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
}

// With the OpenStack services, the sample points at their addresses: the
// https public Keystone that remoteCompute requires, and the catalog's
// endpoints for the other services.
func TestSampleControlPlaneOnLocalServices(t *testing.T) {
	cloud := &sampleCloud{
		keystone: "http://127.0.0.1:15500/v3", keystonePublic: "https://127.0.0.1:15501/v3", region: "RegionOne",
		placement: "http://127.0.0.1:18778", neutron: "http://127.0.0.1:19696", glance: "http://127.0.0.1:19292",
	}
	svc := sampleControlPlane(cloud).Spec.Services
	if svc.Keystone.InternalEndpoint != cloud.keystone || svc.Keystone.PublicEndpoint != cloud.keystonePublic || svc.Keystone.Region != "RegionOne" {
		t.Errorf("keystone = %+v", svc.Keystone)
	}
	for name, tt := range map[string]struct {
		got  *c5c3v1alpha1.ReferencedService
		want string
	}{"placement": {svc.Placement, cloud.placement}, "neutron": {svc.Neutron, cloud.neutron}, "glance": {svc.Glance, cloud.glance}} {
		if tt.got == nil || tt.got.InternalEndpoint != tt.want || tt.got.PublicEndpoint != tt.want {
			t.Errorf("%s = %+v, want %s", name, tt.got, tt.want)
		}
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
