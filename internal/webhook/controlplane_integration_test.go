package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// password appears in the URLs the credential cases submit; no admission
// error may repeat it.
const password = "hunter2"

// newControlPlane returns a schema-valid ControlPlane that every rule
// admits: Nova with computes on other clusters, on a TLS bus, with https
// public endpoints.
func newControlPlane(name string) *c5c3v1alpha1.ControlPlane {
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{
		SecretRef: c5c3v1alpha1.SecretKeyRef{Name: "bus"},
		TLS:       &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "bus-ca"}},
	}
	cp.Spec.Services = c5c3v1alpha1.ServicesSpec{
		Keystone: &c5c3v1alpha1.KeystoneSpec{
			InternalEndpoint: "http://keystone.openstack.svc:5000/v3",
			PublicEndpoint:   "https://keystone.example.com/v3",
		},
		Placement: &c5c3v1alpha1.ReferencedService{PublicEndpoint: "https://placement.example.com"},
		Neutron:   &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: c5c3v1alpha1.ReferencedService{PublicEndpoint: "https://neutron.example.com"}},
		Glance:    &c5c3v1alpha1.ReferencedService{PublicEndpoint: "https://glance.example.com"},
		Nova:      newNovaService(),
	}
	return cp
}

func newNovaService() *c5c3v1alpha1.NovaServiceSpec {
	return &c5c3v1alpha1.NovaServiceSpec{
		OpenStackRelease:     "2026.1",
		Image:                anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
		ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "nova-password"},
		RemoteCompute: &c5c3v1alpha1.RemoteComputeSpec{
			TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "remote-transport"},
		},
	}
}

// rejection is one field error an invalid ControlPlane must be refused with.
type rejection struct {
	field  string
	detail string // start of the message
}

// Every rule of the ControlPlane webhook refuses an invalid ControlPlane
// through a real apiserver, naming the field and the reason; valid ones,
// with and without Nova, are admitted.
func TestIntegrationControlPlaneAdmission(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	remoteRequired := "one of publicEndpoint or gateway is required when services.nova.remoteCompute is set: "
	novaRequired := "is required when services.nova is set: "
	longName := strings.Repeat("c", c5c3v1alpha1.MaxNameLengthWithNova+1)

	tests := []struct {
		name   string
		mutate func(*c5c3v1alpha1.ControlPlane)
		want   []rejection
	}{
		{name: "nova without messaging", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Infrastructure.Messaging = nil
			cp.Spec.Services.Nova.RemoteCompute = nil
		}, want: []rejection{{"spec.infrastructure.messaging", novaRequired}}},
		{name: "remoteCompute without messaging", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Infrastructure.Messaging = nil },
			want: []rejection{
				{"spec.infrastructure.messaging", novaRequired},
				{"spec.services.nova.remoteCompute", "requires a brownfield bus with tls (spec.infrastructure.messaging.secretRef and spec.infrastructure.messaging.tls)"},
			}},
		{name: "nova without keystone", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Keystone = nil },
			want: []rejection{{"spec.services.keystone", novaRequired}}},
		{name: "nova without placement", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Placement = nil },
			want: []rejection{{"spec.services.placement", novaRequired}}},
		{name: "nova without neutron", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Neutron = nil },
			want: []rejection{{"spec.services.neutron", novaRequired}}},
		{name: "nova without glance", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Glance = nil },
			want: []rejection{{"spec.services.glance", novaRequired}}},
		{name: "remoteCompute on a bus without tls", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Infrastructure.Messaging.TLS = nil },
			want: []rejection{{"spec.infrastructure.messaging.tls", "is required when services.nova.remoteCompute is set: "}}},
		{name: "remoteCompute without a public keystone", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Keystone.PublicEndpoint = "" },
			want: []rejection{{"spec.services.keystone.publicEndpoint", remoteRequired}}},
		{name: "remoteCompute with a plaintext public keystone", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.PublicEndpoint = "http://keystone.example.com/v3"
		}, want: []rejection{{"spec.services.keystone.publicEndpoint", "must use scheme https when services.nova.remoteCompute is set: "}}},
		{name: "remoteCompute without a public placement", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Placement = &c5c3v1alpha1.ReferencedService{InternalEndpoint: "http://placement.openstack.svc"}
		}, want: []rejection{{"spec.services.placement.publicEndpoint", remoteRequired}}},
		{name: "remoteCompute without a public neutron", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron = &c5c3v1alpha1.NeutronServiceSpec{}
		}, want: []rejection{{"spec.services.neutron.publicEndpoint", remoteRequired}}},
		{name: "remoteCompute without a public glance", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Glance = &c5c3v1alpha1.ReferencedService{}
		}, want: []rejection{{"spec.services.glance.publicEndpoint", remoteRequired}}},
		{name: "remoteCompute without a public cinder", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Cinder = &c5c3v1alpha1.ReferencedService{InternalEndpoint: "http://cinder.openstack.svc"}
		}, want: []rejection{{"spec.services.cinder.publicEndpoint", remoteRequired}}},
		{name: "remoteCompute without a public barbican", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Barbican = &c5c3v1alpha1.ReferencedService{}
		}, want: []rejection{{"spec.services.barbican.publicEndpoint", remoteRequired}}},
		{name: "metadata gateway below a prefix", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{ParentRef: &c5c3v1alpha1.ParentReference{Name: "gw"}, Hostname: "metadata.example.com", Path: "/metadata"}
		}, want: []rejection{{"spec.services.nova.metadataGateway.path", `must be empty or "/"`}}},
		{name: "metadata and console share a hostname", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{ParentRef: &c5c3v1alpha1.ParentReference{Name: "gw"}, Hostname: "nova.example.com"}
			cp.Spec.Services.Nova.ConsoleProxy = &c5c3v1alpha1.ConsoleProxySpec{Enabled: true, Hostname: "nova.example.com"}
		}, want: []rejection{{"spec.services.nova.consoleProxy.hostname", "must differ from services.nova.metadataGateway.hostname"}}},
		{name: "over-long name", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Name = longName },
			want: []rejection{{"metadata.name", fmt.Sprintf("must be at most %d characters when services.nova is set", c5c3v1alpha1.MaxNameLengthWithNova)}}},
		{name: "keystone internal endpoint with credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.InternalEndpoint = "https://admin:" + password + "@keystone.openstack.svc:5000/v3"
		}, want: []rejection{{"spec.services.keystone.internalEndpoint", "must not carry a user name or password"}}},
		{name: "glance public endpoint with credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Glance.PublicEndpoint = "https://admin:" + password + "@glance.example.com"
		}, want: []rejection{{"spec.services.glance.publicEndpoint", "must not carry a user name or password"}}},
		{name: "placement public endpoint over two lines", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Placement.PublicEndpoint = "https://placement.example.com\n[DEFAULT]"
		}, want: []rejection{{"spec.services.placement.publicEndpoint", "must be a single line"}}},
		{name: "neutron internal endpoint without host", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.InternalEndpoint = "http://"
		}, want: []rejection{{"spec.services.neutron.internalEndpoint", "must name a host"}}},
		{name: "cinder public endpoint unparseable", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Cinder = &c5c3v1alpha1.ReferencedService{PublicEndpoint: "https://[::1"}
		}, want: []rejection{{"spec.services.cinder.publicEndpoint", "is not a valid URL"}}},
		// The review's B4: the admin password goes to the ControlPlane's
		// Keystone, so only the operator's allowlist admits one.
		{name: "keystone over plain http where only https is allowed", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.InternalEndpoint = "http://keystone.example.com/v3"
		}, want: []rejection{{"spec.services.keystone.internalEndpoint", "must use https"}}},
		{name: "keystone outside the allowed hosts", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.PublicEndpoint = "https://keystone.evil.example/v3"
		}, want: []rejection{{"spec.services.keystone.publicEndpoint", "host keystone.evil.example:443 is not allowed"}}},
		{name: "keystone gateway outside the allowed hosts", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.PublicEndpoint = ""
			cp.Spec.Services.Keystone.Gateway = &c5c3v1alpha1.GatewaySpec{Hostname: "id.evil.example"}
		}, want: []rejection{{"spec.services.keystone.gateway.hostname", "host id.evil.example:443 is not allowed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := newControlPlane("cp-invalid")
			tt.mutate(cp)
			assertRejected(t, e.Management.Client.Create(ctx, cp), tt.want)
		})
	}

	valid := []struct {
		name   string
		mutate func(*c5c3v1alpha1.ControlPlane)
	}{
		{name: "cp-remote", mutate: func(*c5c3v1alpha1.ControlPlane) {}},
		{name: "cp-gateways", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			s := &cp.Spec.Services
			s.Keystone.PublicEndpoint, s.Keystone.Gateway = "", &c5c3v1alpha1.GatewaySpec{Hostname: "keystone.example.com"}
			s.Placement.PublicEndpoint, s.Placement.Gateway = "", &c5c3v1alpha1.GatewaySpec{Hostname: "placement.example.com"}
			s.Cinder = &c5c3v1alpha1.ReferencedService{Gateway: &c5c3v1alpha1.GatewaySpec{Hostname: "cinder.example.com"}}
			s.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{ParentRef: &c5c3v1alpha1.ParentReference{Name: "gw"}, Hostname: "metadata.example.com", Path: "/"}
			s.Nova.ConsoleProxy = &c5c3v1alpha1.ConsoleProxySpec{Enabled: true, Hostname: "console.example.com"}
		}},
		{name: "cp-in-cluster", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.RemoteCompute = nil
			cp.Spec.Infrastructure.Messaging.TLS = nil
			cp.Spec.Services.Keystone.PublicEndpoint = ""
			cp.Spec.Services.Placement = &c5c3v1alpha1.ReferencedService{}
		}},
		{name: "cp-without-nova", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec = c5c3v1alpha1.ControlPlaneSpec{} }},
		{name: strings.Repeat("n", c5c3v1alpha1.MaxNameLengthWithNova), mutate: func(*c5c3v1alpha1.ControlPlane) {}},
	}
	for _, tt := range valid {
		t.Run("valid "+tt.name, func(t *testing.T) {
			cp := newControlPlane(tt.name)
			tt.mutate(cp)
			if err := e.Management.Client.Create(ctx, cp); err != nil {
				t.Fatalf("a valid ControlPlane was refused: %v", err)
			}
			t.Cleanup(func() { _ = e.Management.Client.Delete(ctx, cp) })
		})
	}

	// An over-long name is admitted without Nova, but turning Nova on later
	// is refused: the projected {cp}-nova would not fit.
	t.Run("enabling nova on an over-long name", func(t *testing.T) {
		cp := newControlPlane(longName)
		cp.Spec = c5c3v1alpha1.ControlPlaneSpec{}
		if err := e.Management.Client.Create(ctx, cp); err != nil {
			t.Fatalf("an over-long name without Nova was refused: %v", err)
		}
		t.Cleanup(func() { _ = e.Management.Client.Delete(ctx, cp) })
		if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
			t.Fatal(err)
		}
		cp.Spec = newControlPlane(longName).Spec
		assertRejected(t, e.Management.Client.Update(ctx, cp),
			[]rejection{{"metadata.name", fmt.Sprintf("must be at most %d characters when services.nova is set", c5c3v1alpha1.MaxNameLengthWithNova)}})
	})
}

// assertRejected fails unless err is the webhook's refusal naming every
// wanted field and message, without the test password.
func assertRejected(t *testing.T, err error, want []rejection) {
	t.Helper()
	if err == nil {
		t.Fatal("admitted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "vcontrolplane.c5c3.io") {
		t.Errorf("not refused by the ControlPlane webhook: %v", err)
	}
	for _, w := range want {
		if !strings.Contains(msg, w.field+":") || !strings.Contains(msg, w.detail) {
			t.Errorf("error %q does not name %s with %q", msg, w.field, w.detail)
		}
	}
	if strings.Contains(msg, password) {
		t.Error("the admission error repeats a password from a URL")
	}
}
