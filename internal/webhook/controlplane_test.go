package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
)

// validControlPlane returns a ControlPlane that passes every rule with the
// most demanding setting: Nova with computes on other clusters.
func validControlPlane() *c5c3v1alpha1.ControlPlane {
	cp := &c5c3v1alpha1.ControlPlane{}
	cp.Name = "cloud"
	cp.Namespace = "openstack"
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
		Nova: &c5c3v1alpha1.NovaServiceSpec{
			OpenStackRelease:     "2026.1",
			Image:                anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
			ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "nova-password"},
			RemoteCompute: &c5c3v1alpha1.RemoteComputeSpec{
				TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "remote-transport"},
			},
		},
	}
	return cp
}

// withoutRemoteCompute drops remoteCompute and everything only it needs.
func withoutRemoteCompute(cp *c5c3v1alpha1.ControlPlane) {
	cp.Spec.Services.Nova.RemoteCompute = nil
	cp.Spec.Infrastructure.Messaging.TLS = nil
	cp.Spec.Services.Keystone.PublicEndpoint = ""
	for _, s := range []*c5c3v1alpha1.ReferencedService{cp.Spec.Services.Placement, &cp.Spec.Services.Neutron.ReferencedService, cp.Spec.Services.Glance} {
		s.PublicEndpoint = ""
		s.InternalEndpoint = "http://service.openstack.svc"
	}
}

// expected is one error a case must produce.
type expected struct {
	field  string
	typ    field.ErrorType
	detail string // start of the detail
}

func TestValidateControlPlane(t *testing.T) {
	remoteRequired := "one of publicEndpoint or gateway is required when services.nova.remoteCompute is set: "
	longName := strings.Repeat("c", c5c3v1alpha1.MaxNameLengthWithNova+1)
	gateway := func(host string) *c5c3v1alpha1.GatewaySpec { return &c5c3v1alpha1.GatewaySpec{Hostname: host} }

	tests := []struct {
		name   string
		old    func() *c5c3v1alpha1.ControlPlane // nil means create
		mutate func(*c5c3v1alpha1.ControlPlane)
		want   []expected // empty means valid
		absent []string   // fields that must not be reported
	}{
		// Valid ControlPlanes.
		{name: "valid with remoteCompute and https public endpoints", mutate: func(*c5c3v1alpha1.ControlPlane) {}},
		{name: "valid without nova", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec = c5c3v1alpha1.ControlPlaneSpec{}
			cp.Name = longName
		}},
		{name: "valid without nova but with services", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova, cp.Spec.Infrastructure.Messaging = nil, nil
			cp.Spec.Services.Keystone.PublicEndpoint = "http://keystone.example.com"
		}},
		{name: "valid nova without remoteCompute", mutate: withoutRemoteCompute},
		{name: "valid remoteCompute with gateways instead of public endpoints", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			s := &cp.Spec.Services
			s.Keystone.PublicEndpoint, s.Keystone.Gateway = "", gateway("keystone.example.com")
			s.Placement.PublicEndpoint, s.Placement.Gateway = "", gateway("placement.example.com")
			s.Neutron.PublicEndpoint, s.Neutron.Gateway = "", gateway("neutron.example.com")
			s.Glance.PublicEndpoint, s.Glance.Gateway = "", gateway("glance.example.com")
			s.Cinder = &c5c3v1alpha1.ReferencedService{Gateway: gateway("cinder.example.com")}
			s.Barbican = &c5c3v1alpha1.ReferencedService{PublicEndpoint: "https://barbican.example.com"}
		}},
		{name: "valid metadata gateway at the root with a distinct console hostname", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{ParentRef: &c5c3v1alpha1.ParentReference{Name: "gw"}, Hostname: "metadata.example.com", Path: "/"}
			cp.Spec.Services.Nova.ConsoleProxy = &c5c3v1alpha1.ConsoleProxySpec{Enabled: true, Hostname: "console.example.com"}
		}},
		{name: "valid name of exactly the limit", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Name = strings.Repeat("c", c5c3v1alpha1.MaxNameLengthWithNova)
		}},
		{name: "valid update keeps an over-long name because nova was already enabled",
			old: func() *c5c3v1alpha1.ControlPlane {
				cp := validControlPlane()
				cp.Name = longName
				return cp
			},
			mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Name = longName }},

		{name: "valid hypervisor operator with admin credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.HypervisorOperator = &c5c3v1alpha1.HypervisorOperatorSpec{}
			cp.Spec.Services.Keystone.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: "keystone-admin"}
		}},
		{name: "hypervisor operator without admin credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.HypervisorOperator = &c5c3v1alpha1.HypervisorOperatorSpec{}
		}, want: []expected{{"spec.services.keystone.adminCredentialsSecretRef", field.ErrorTypeRequired,
			"is required when services.nova.hypervisorOperator is set: "}}},

		{name: "per-cluster credentials without admin credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.RemoteCompute.Credentials = c5c3v1alpha1.PerClusterCredentials
		}, want: []expected{{"spec.services.keystone.adminCredentialsSecretRef", field.ErrorTypeRequired,
			"is required when services.nova.remoteCompute.credentials is PerCluster: "}}},

		{name: "per-cluster broker users", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.RemoteCompute.Credentials = c5c3v1alpha1.PerClusterCredentials
			cp.Spec.Services.Keystone.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: "keystone-admin"}
			cp.Spec.Services.Nova.RemoteCompute.BrokerAdminSecretRef = &anvilmeta.LocalObjectReference{Name: "broker-admin"}
		}},
		{name: "broker users without per-cluster credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.RemoteCompute.BrokerAdminSecretRef = &anvilmeta.LocalObjectReference{Name: "broker-admin"}
		}, want: []expected{{"spec.services.nova.remoteCompute.brokerAdminSecretRef", field.ErrorTypeForbidden,
			"is only used with credentials PerCluster: "}}},

		// Rule 1: the bus.
		{name: "nova without messaging", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			withoutRemoteCompute(cp)
			cp.Spec.Infrastructure.Messaging = nil
		}, want: []expected{{"spec.infrastructure.messaging", field.ErrorTypeRequired, "is required when services.nova is set: "}}},
		{name: "remoteCompute without messaging", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Infrastructure.Messaging = nil },
			want: []expected{
				{"spec.infrastructure.messaging", field.ErrorTypeRequired, "is required when services.nova is set: "},
				{"spec.services.nova.remoteCompute", field.ErrorTypeForbidden,
					"requires a brownfield bus with tls (spec.infrastructure.messaging.secretRef and spec.infrastructure.messaging.tls)"},
			},
			absent: []string{"spec.infrastructure.messaging.tls"}},

		// Rule 2: Nova's dependencies, one error per missing service.
		{name: "nova without keystone", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Keystone = nil },
			want:   []expected{{"spec.services.keystone", field.ErrorTypeRequired, "is required when services.nova is set: "}},
			absent: []string{"spec.services.keystone.publicEndpoint"}},
		{name: "nova without placement", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Placement = nil },
			want:   []expected{{"spec.services.placement", field.ErrorTypeRequired, "is required when services.nova is set: "}},
			absent: []string{"spec.services.placement.publicEndpoint"}},
		{name: "nova without neutron", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Neutron = nil },
			want:   []expected{{"spec.services.neutron", field.ErrorTypeRequired, "is required when services.nova is set: "}},
			absent: []string{"spec.services.neutron.publicEndpoint"}},
		// The OVN central must be the ControlPlane's own namespace's.
		{name: "ovn central in another namespace", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.OVN = &c5c3v1alpha1.NeutronOVNSpec{CentralRef: c5c3v1alpha1.OVNCentralReference{Name: "ovn", Namespace: "elsewhere"}}
		}, want: []expected{{"spec.services.neutron.ovn.centralRef.namespace", field.ErrorTypeInvalid, "must be empty or the ControlPlane's namespace"}}},
		{name: "ovn central without a name", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.OVN = &c5c3v1alpha1.NeutronOVNSpec{}
		}, want: []expected{{"spec.services.neutron.ovn.centralRef.name", field.ErrorTypeRequired, "names the OVNCentral"}}},
		{name: "nova without glance", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Glance = nil },
			want:   []expected{{"spec.services.glance", field.ErrorTypeRequired, "is required when services.nova is set: "}},
			absent: []string{"spec.services.glance.publicEndpoint"}},
		{name: "nova without any dependency", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			withoutRemoteCompute(cp)
			cp.Spec.Services = c5c3v1alpha1.ServicesSpec{Nova: cp.Spec.Services.Nova}
		}, want: []expected{
			{"spec.services.keystone", field.ErrorTypeRequired, "is required when services.nova is set: "},
			{"spec.services.placement", field.ErrorTypeRequired, "is required when services.nova is set: "},
			{"spec.services.neutron", field.ErrorTypeRequired, "is required when services.nova is set: "},
			{"spec.services.glance", field.ErrorTypeRequired, "is required when services.nova is set: "},
		}},

		// Rule 3: computes on other clusters.
		{name: "remoteCompute on a bus without tls", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Infrastructure.Messaging.TLS = nil },
			want:   []expected{{"spec.infrastructure.messaging.tls", field.ErrorTypeRequired, "is required when services.nova.remoteCompute is set: "}},
			absent: []string{"spec.services.nova.remoteCompute"}},
		{name: "remoteCompute without a public keystone", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Keystone.PublicEndpoint = "" },
			want: []expected{{"spec.services.keystone.publicEndpoint", field.ErrorTypeRequired, remoteRequired}}},
		{name: "remoteCompute with a plaintext public keystone", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.PublicEndpoint = "http://keystone.example.com/v3"
		}, want: []expected{{"spec.services.keystone.publicEndpoint", field.ErrorTypeInvalid, "must use scheme https when services.nova.remoteCompute is set: "}}},
		{name: "remoteCompute without a public placement", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Placement = &c5c3v1alpha1.ReferencedService{InternalEndpoint: "http://placement.openstack.svc"}
		}, want: []expected{{"spec.services.placement.publicEndpoint", field.ErrorTypeRequired, remoteRequired}}},
		{name: "remoteCompute without a public neutron", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron = &c5c3v1alpha1.NeutronServiceSpec{}
		}, want: []expected{{"spec.services.neutron.publicEndpoint", field.ErrorTypeRequired, remoteRequired}}},
		{name: "remoteCompute without a public glance", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Glance = &c5c3v1alpha1.ReferencedService{}
		}, want: []expected{{"spec.services.glance.publicEndpoint", field.ErrorTypeRequired, remoteRequired}}},
		{name: "remoteCompute without a public cinder", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Cinder = &c5c3v1alpha1.ReferencedService{InternalEndpoint: "http://cinder.openstack.svc"}
		}, want: []expected{{"spec.services.cinder.publicEndpoint", field.ErrorTypeRequired, remoteRequired}}},
		{name: "remoteCompute without a public barbican", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Barbican = &c5c3v1alpha1.ReferencedService{}
		}, want: []expected{{"spec.services.barbican.publicEndpoint", field.ErrorTypeRequired, remoteRequired}}},

		// Rule 4: the metadata gateway path.
		{name: "metadata gateway below a prefix", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{ParentRef: &c5c3v1alpha1.ParentReference{Name: "gw"}, Hostname: "metadata.example.com", Path: "/metadata"}
		}, want: []expected{{"spec.services.nova.metadataGateway.path", field.ErrorTypeInvalid, `must be empty or "/"`}}},

		{name: "a compute URL with a password", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.PublicEndpoint = "https://nova:hunter2@compute.example.com/v2.1"
		}, want: []expected{{"spec.services.nova.publicEndpoint", field.ErrorTypeInvalid, "must not carry a user name or password"}}},
		{name: "metadata gateway without a parent", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{Hostname: "metadata.example.com"}
		}, want: []expected{{"spec.services.nova.metadataGateway.parentRef", field.ErrorTypeRequired, "is required: the metadata API's HTTPRoute attaches to this Gateway"}}},

		// Rule 5: one hostname for two Nova endpoints.
		{name: "metadata and console share a hostname", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova.MetadataGateway = &c5c3v1alpha1.GatewaySpec{ParentRef: &c5c3v1alpha1.ParentReference{Name: "gw"}, Hostname: "nova.example.com"}
			cp.Spec.Services.Nova.ConsoleProxy = &c5c3v1alpha1.ConsoleProxySpec{Enabled: true, Hostname: "Nova.Example.com"}
		}, want: []expected{{"spec.services.nova.consoleProxy.hostname", field.ErrorTypeInvalid, "must differ from services.nova.metadataGateway.hostname"}}},

		// Rule 6: room for the -nova suffix.
		{name: "create with an over-long name", mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Name = longName },
			want: []expected{{"metadata.name", field.ErrorTypeInvalid, "must be at most 36 characters when services.nova is set"}}},
		{name: "update that enables nova on an over-long name",
			old: func() *c5c3v1alpha1.ControlPlane {
				cp := &c5c3v1alpha1.ControlPlane{}
				cp.Name = longName
				return cp
			},
			mutate: func(cp *c5c3v1alpha1.ControlPlane) { cp.Name = longName },
			want:   []expected{{"metadata.name", field.ErrorTypeInvalid, "must be at most 36 characters when services.nova is set"}}},

		// Rule 7: endpoint URLs.
		{name: "keystone internal endpoint with credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.InternalEndpoint = "https://admin:hunter2@keystone.openstack.svc:5000/v3"
		}, want: []expected{{"spec.services.keystone.internalEndpoint", field.ErrorTypeInvalid, "must not carry a user name or password"}}},
		{name: "keystone public endpoint with credentials", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Keystone.PublicEndpoint = "http://admin:hunter2@keystone.example.com/v3"
		}, want: []expected{{"spec.services.keystone.publicEndpoint", field.ErrorTypeInvalid, "must not carry a user name or password"}}},
		{name: "credentials are rejected without nova too", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Nova, cp.Spec.Infrastructure.Messaging = nil, nil
			cp.Spec.Services.Glance.InternalEndpoint = "https://admin:hunter2@glance.openstack.svc"
		}, want: []expected{{"spec.services.glance.internalEndpoint", field.ErrorTypeInvalid, "must not carry a user name or password"}}},
		{name: "placement public endpoint over two lines", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Placement.PublicEndpoint = "https://placement.example.com\n[DEFAULT]"
		}, want: []expected{{"spec.services.placement.publicEndpoint", field.ErrorTypeInvalid, "must be a single line"}}},
		{name: "neutron internal endpoint without host", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Neutron.InternalEndpoint = "http://"
		}, want: []expected{{"spec.services.neutron.internalEndpoint", field.ErrorTypeInvalid, "must name a host"}}},
		{name: "cinder public endpoint unparseable", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Cinder = &c5c3v1alpha1.ReferencedService{PublicEndpoint: "https://[::1"}
		}, want: []expected{{"spec.services.cinder.publicEndpoint", field.ErrorTypeInvalid, "is not a valid URL"}}},
		{name: "barbican internal endpoint with a password only", mutate: func(cp *c5c3v1alpha1.ControlPlane) {
			cp.Spec.Services.Barbican = &c5c3v1alpha1.ReferencedService{
				InternalEndpoint: "https://:hunter2@barbican.openstack.svc",
				PublicEndpoint:   "https://barbican.example.com",
			}
		}, want: []expected{{"spec.services.barbican.internalEndpoint", field.ErrorTypeInvalid, "must not carry a user name or password"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := validControlPlane()
			tt.mutate(cp)
			var old *c5c3v1alpha1.ControlPlane
			if tt.old != nil {
				old = tt.old()
			}
			errs := ValidateControlPlane(cp, old)
			for _, e := range errs {
				if strings.Contains(e.Error(), "hunter2") {
					t.Errorf("error echoes a password: %v", e)
				}
			}
			if len(tt.want) == 0 && len(errs) != 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if len(errs) != len(tt.want) {
				t.Errorf("got %d errors, want %d: %v", len(errs), len(tt.want), errs)
			}
			for _, w := range tt.want {
				if !hasError(errs, w) {
					t.Errorf("errors %v do not report %s %s starting %q", errs, w.typ, w.field, w.detail)
				}
			}
			for _, f := range tt.absent {
				for _, e := range errs {
					if e.Field == f {
						t.Errorf("%s is reported although another rule covers it: %v", f, e)
					}
				}
			}
		})
	}
}

func hasError(errs field.ErrorList, w expected) bool {
	for _, e := range errs {
		if e.Field == w.field && e.Type == w.typ && strings.HasPrefix(e.Detail, w.detail) {
			return true
		}
	}
	return false
}
