package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

// validMetadataAgent is the guide's agent with every optional field set to
// a value the rules admit, so that each case breaks exactly one thing.
func validMetadataAgent() *neutronv1alpha1.NeutronMetadataAgent {
	a := &neutronv1alpha1.NeutronMetadataAgent{}
	a.Name, a.Namespace = "controlplane-compute-metadata", "openstack"
	s := &a.Spec
	s.OpenStackRelease = "2026.1"
	s.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	s.ChassisRef.Name = "controlplane-compute-chassis"
	s.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	s.NovaMetadata = neutronv1alpha1.NovaMetadataSpec{
		Host:              "nova-metadata.127-0-0-1.nip.io",
		Port:              ptr.To[int32](443),
		Protocol:          neutronv1alpha1.ProtocolHTTPS,
		CABundleSecretRef: &neutronv1alpha1.SecretKeyRef{Name: "nova-metadata-ca"},
		SharedSecretRef:   &neutronv1alpha1.SecretKeyRef{Name: "controlplane-nova-metadata-agent-secret", Key: "shared_secret"},
	}
	s.MetadataWorkers = ptr.To[int32](2)
	s.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("230m")}}
	return a
}

// TestValidateNeutronMetadataAgent has one case per admission rule of an
// agent, on create, and the shapes of a host the rules admit.
func TestValidateNeutronMetadataAgent(t *testing.T) {
	host := func(h string) func(*neutronv1alpha1.NeutronMetadataAgent) {
		return func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.Host = h }
	}
	badHost := want{"spec.novaMetadata.host", field.ErrorTypeInvalid, msgNovaMetadataHostForm}
	tests := []struct {
		name   string
		mutate func(*neutronv1alpha1.NeutronMetadataAgent)
		want   []want // nil: admitted
	}{
		{name: "every field set", mutate: func(*neutronv1alpha1.NeutronMetadataAgent) {}},
		{name: "only the required fields", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec = neutronv1alpha1.NeutronMetadataAgentSpec{OpenStackRelease: "2026.2", Image: a.Spec.Image, ChassisRef: a.Spec.ChassisRef}
		}},
		// The year is compared as a number, not only its first digits.
		{name: "a later year", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2027.1" }},
		{name: "an IPv4 host", mutate: host("192.0.2.10")},
		// oslo's host option takes a bare IPv6 literal, without brackets.
		{name: "an IPv6 host", mutate: host("2001:db8::10")},
		{name: "a host in capitals", mutate: host("Nova-Metadata.Example.COM")},
		{name: "name of 63 characters", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Name = strings.Repeat("m", 63) }},

		{name: "name of 64 characters", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Name = strings.Repeat("m", 64) },
			want: []want{{"metadata.name", field.ErrorTypeInvalid, "name must be at most 63 characters"}}},
		{name: "release not a release", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2026.3" },
			want: []want{{"spec.openStackRelease", field.ErrorTypeInvalid, msgReleaseFormat}}},
		{name: "release older than 2026.1", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2025.2" },
			want: []want{{"spec.openStackRelease", field.ErrorTypeInvalid, "openStackRelease must be at least 2026.1"}}},
		{name: "image without tag or digest", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.Image.Tag = "" },
			want: []want{{"spec.image", field.ErrorTypeInvalid, msgTagXorDigest}}},
		{name: "image without repository", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.Image.Repository = "" },
			want: []want{{"spec.image.repository", field.ErrorTypeRequired, msgRepository}}},
		{name: "no chassis", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.ChassisRef.Name = "" },
			want: []want{{"spec.chassisRef.name", field.ErrorTypeRequired, msgChassisRefRequired}}},
		{name: "chassis name with a line break", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.ChassisRef.Name = "chassis\r\nx" },
			want: []want{{"spec.chassisRef.name", field.ErrorTypeInvalid, "chassisRef.name must not contain a newline or carriage return"}}},
		{name: "host with a line break", mutate: host("nova\nmetadata"),
			want: []want{{"spec.novaMetadata.host", field.ErrorTypeInvalid, "host must not contain a newline or carriage return"}}},
		{name: "host with a control character", mutate: host("nova\tmetadata"),
			want: []want{{"spec.novaMetadata.host", field.ErrorTypeInvalid, "host must not contain a control character"}}},
		// Each of these is part of a URL, which the agent would take for a
		// host name it cannot resolve.
		{name: "host with a scheme", mutate: host("https://nova-metadata.example.com"), want: []want{badHost}},
		{name: "host with a port", mutate: host("nova-metadata.example.com:8775"), want: []want{badHost}},
		{name: "host with a path", mutate: host("nova-metadata.example.com/metadata"), want: []want{badHost}},
		{name: "host with user info", mutate: host("admin@nova-metadata.example.com"), want: []want{badHost}},
		{name: "port 0", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.Port = ptr.To[int32](0) },
			want: []want{{"spec.novaMetadata.port", field.ErrorTypeInvalid, "must be between 1 and 65535"}}},
		{name: "port 65536", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.Port = ptr.To[int32](65536) },
			want: []want{{"spec.novaMetadata.port", field.ErrorTypeInvalid, "must be between 1 and 65535"}}},
		{name: "protocol ftp", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec.NovaMetadata.Protocol, a.Spec.NovaMetadata.CABundleSecretRef = "ftp", nil
		}, want: []want{{"spec.novaMetadata.protocol", field.ErrorTypeNotSupported, ""}}},
		{name: "CA bundle with protocol http", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec.NovaMetadata.Protocol = neutronv1alpha1.ProtocolHTTP
		}, want: []want{{"spec.novaMetadata.caBundleSecretRef", field.ErrorTypeInvalid, "caBundleSecretRef requires protocol https"}}},
		// An absent protocol is http, so the CA bundle is refused there too.
		{name: "CA bundle with the default protocol", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.Protocol = "" },
			want: []want{{"spec.novaMetadata.caBundleSecretRef", field.ErrorTypeInvalid, "caBundleSecretRef requires protocol https"}}},
		{name: "CA bundle without a Secret name", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.CABundleSecretRef.Name = "" },
			want: []want{{"spec.novaMetadata.caBundleSecretRef.name", field.ErrorTypeRequired,
				"caBundleSecretRef.name must be set when spec.novaMetadata.caBundleSecretRef is configured"}}},
		{name: "CA bundle Secret name with a line break", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.CABundleSecretRef.Name = "ca\n" },
			want: []want{{"spec.novaMetadata.caBundleSecretRef.name", field.ErrorTypeInvalid, "caBundleSecretRef.name must not contain a newline"}}},
		{name: "shared secret without a Secret name", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.SharedSecretRef.Name = "" },
			want: []want{{"spec.novaMetadata.sharedSecretRef.name", field.ErrorTypeRequired,
				"sharedSecretRef.name must be set when spec.novaMetadata.sharedSecretRef is configured"}}},
		{name: "shared secret Secret name with a NUL", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.SharedSecretRef.Name = "secret\x00" },
			want: []want{{"spec.novaMetadata.sharedSecretRef.name", field.ErrorTypeInvalid, "sharedSecretRef.name must not contain a control character"}}},
		{name: "no workers", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.MetadataWorkers = ptr.To[int32](0) },
			want: []want{{"spec.metadataWorkers", field.ErrorTypeInvalid, "must be at least 1"}}},
		{name: "empty target cluster name", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.TargetClusterRef.Name = "" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeRequired, msgTargetName}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := validMetadataAgent()
			tt.mutate(a)
			assertErrors(t, ValidateNeutronMetadataAgent(a, nil), tt.want)
		})
	}
}

// TestValidateNeutronMetadataAgentUpdate has one case per rule that
// compares with the stored agent.
func TestValidateNeutronMetadataAgentUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*neutronv1alpha1.NeutronMetadataAgent)
		mutate func(*neutronv1alpha1.NeutronMetadataAgent)
		want   []want
	}{
		{name: "release, image and Nova's address change", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
			a.Spec.OpenStackRelease = "2026.2"
			a.Spec.Image.Tag = "2026.2"
			a.Spec.NovaMetadata = neutronv1alpha1.NovaMetadataSpec{Host: "192.0.2.10"}
		}},
		{name: "chassisRef renamed", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.ChassisRef.Name = "another-chassis" },
			want: []want{{"spec.chassisRef.name", field.ErrorTypeInvalid, msgChassisRefImmutable}}},
		{name: "targetClusterRef removed", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.TargetClusterRef = nil },
			want: []want{{"spec.targetClusterRef", field.ErrorTypeForbidden, msgTargetImmutable}}},
		{name: "targetClusterRef renamed", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.TargetClusterRef.Name = "compute-b" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeInvalid, msgTargetImmutable}}},
		{name: "release changed to one below 2026.1", mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2025.2" },
			want: []want{{"spec.openStackRelease", field.ErrorTypeInvalid, "openStackRelease must be at least 2026.1"}}},
		// An old agent must stay updatable, so its finalizer can go.
		{name: "an old release that did not change", old: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2025.2" },
			mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.OpenStackRelease = "2025.2" }},
		{name: "an over-long name is not refused again", old: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Name = strings.Repeat("m", 64) },
			mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Name = strings.Repeat("m", 64) }},
		{name: "a deleting agent with an unchanged invalid spec", old: func(a *neutronv1alpha1.NeutronMetadataAgent) { a.Spec.NovaMetadata.Protocol = "" },
			mutate: func(a *neutronv1alpha1.NeutronMetadataAgent) {
				a.Spec.NovaMetadata.Protocol = ""
				a.DeletionTimestamp = &metav1.Time{}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validMetadataAgent()
			if tt.old != nil {
				tt.old(old)
			}
			a := validMetadataAgent()
			tt.mutate(a)
			assertErrors(t, ValidateNeutronMetadataAgent(a, old), tt.want)
		})
	}
}

// An update that keeps a release below the minimum is admitted with a
// warning that names it; a current release gets none.
func TestNeutronMetadataAgentOldReleaseWarning(t *testing.T) {
	old, a := validMetadataAgent(), validMetadataAgent()
	old.Spec.OpenStackRelease, a.Spec.OpenStackRelease = "2025.2", "2025.2"
	warnings, err := NeutronMetadataAgentValidator{}.ValidateUpdate(context.Background(), old, a)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "2025.2 is older than 2026.1") {
		t.Errorf("warnings = %q, err = %v", warnings, err)
	}
	warnings, err = NeutronMetadataAgentValidator{}.ValidateUpdate(context.Background(), validMetadataAgent(), validMetadataAgent())
	if err != nil || len(warnings) != 0 {
		t.Errorf("a current release: warnings = %q, err = %v", warnings, err)
	}
}

// A host with user info may hold a password; the refusal must not quote it.
func TestValidateNeutronMetadataAgentRedactsUserInfo(t *testing.T) {
	for _, host := range []string{"admin:s3cret@nova-metadata.example.com", "admin:s3cret@nova\nmetadata"} {
		a := validMetadataAgent()
		a.Spec.NovaMetadata.Host = host
		agg := ValidateNeutronMetadataAgent(a, nil).ToAggregate()
		if agg == nil || strings.Contains(agg.Error(), "s3cret") || !strings.Contains(agg.Error(), "spec.novaMetadata.host") {
			t.Errorf("host %q: %v", host, agg)
		}
	}
}
