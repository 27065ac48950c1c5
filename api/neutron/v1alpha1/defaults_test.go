package v1alpha1

import (
	"testing"

	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// An agent the apiserver did not default resolves to the documented
// defaults, and a set value wins over each of them.
func TestResolvedDefaults(t *testing.T) {
	a := &NeutronMetadataAgent{}
	n := a.Spec.NovaMetadata
	if n.ResolvedPort() != 8775 || n.ResolvedProtocol() != ProtocolHTTP || a.Spec.ResolvedMetadataWorkers() != 4 {
		t.Errorf("defaults = %d %q %d", n.ResolvedPort(), n.ResolvedProtocol(), a.Spec.ResolvedMetadataWorkers())
	}
	if n.ResolvedCABundleKey() != "ca.crt" || n.ResolvedSharedSecretKey() != "shared_secret" {
		t.Errorf("key defaults = %q %q", n.ResolvedCABundleKey(), n.ResolvedSharedSecretKey())
	}
	// A reference without a key still takes the default key.
	n.CABundleSecretRef = &SecretKeyRef{Name: "nova-metadata-ca"}
	if n.ResolvedCABundleKey() != "ca.crt" {
		t.Errorf("CA key of a reference without key = %q", n.ResolvedCABundleKey())
	}

	a.Spec = NeutronMetadataAgentSpec{
		Image:           anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"},
		MetadataWorkers: ptr.To[int32](2),
		NovaMetadata: NovaMetadataSpec{
			Port: ptr.To[int32](443), Protocol: ProtocolHTTPS,
			CABundleSecretRef: &SecretKeyRef{Name: "ca", Key: "bundle.pem"},
			SharedSecretRef:   &SecretKeyRef{Name: "secret", Key: "value"},
		},
	}
	n = a.Spec.NovaMetadata
	if n.ResolvedPort() != 443 || n.ResolvedProtocol() != ProtocolHTTPS || a.Spec.ResolvedMetadataWorkers() != 2 ||
		n.ResolvedCABundleKey() != "bundle.pem" || n.ResolvedSharedSecretKey() != "value" {
		t.Errorf("set values were not kept: %+v", a.Spec)
	}
	if got := a.ResolvedImage(); got != "ghcr.io/c5c3/neutron:2026.1" {
		t.Errorf("image = %q", got)
	}
}
