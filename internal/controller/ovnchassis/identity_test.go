package ovnchassis

import (
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

func TestBuildIdentityCertificate(t *testing.T) {
	c := testChassis("compute-a")
	e := NodeEntry{Name: "hv-1", SystemID: "3f6c2a1e-0000-4000-8000-000000000001"}
	owner := map[string]string{"openstack.c5c3.io/owner-name": c.Name}
	tests := []struct {
		name       string
		issuer     *ovnv1alpha1.IssuerReference
		wantIssuer string
		wantKind   string
	}{
		{name: "the central's own CA", wantIssuer: "controlplane-ovn-ca", wantKind: ovnv1alpha1.IssuerKind},
		{name: "the issuer the central names", issuer: &ovnv1alpha1.IssuerReference{Name: "site-ca"}, wantIssuer: "site-ca", wantKind: ovnv1alpha1.ClusterIssuerKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			central := publishedCentral()
			central.Spec.TLS.IssuerRef = tt.issuer
			cert := BuildIdentityCertificate(c, central, e, owner)
			s := cert.Spec
			if s.CommonName != e.SystemID || s.SecretName != IdentityName(c, "hv-1") || cert.Name != s.SecretName {
				t.Errorf("common name %q, Secret %q, name %q", s.CommonName, s.SecretName, cert.Name)
			}
			if s.IssuerRef.Name != tt.wantIssuer || s.IssuerRef.Kind != tt.wantKind {
				t.Errorf("issuer = %+v, want %s %s", s.IssuerRef, tt.wantKind, tt.wantIssuer)
			}
			if len(s.Usages) != 3 || s.Usages[2] != cmv1.UsageClientAuth || s.IsCA || len(s.DNSNames) != 0 {
				t.Errorf("usages %v, CA %v, DNS names %v: want a client certificate only", s.Usages, s.IsCA, s.DNSNames)
			}
			if l := s.SecretTemplate.Labels; l["openstack.c5c3.io/owner-name"] != c.Name || l[componentLabel] != IdentityComponent {
				t.Errorf("the Secret's labels = %v, want the ownership and component labels", l)
			}
			if cert.Annotations[nodeAnnotation] != "hv-1" || s.SecretTemplate.Annotations[nodeAnnotation] != "hv-1" {
				t.Error("the node is not named on the Certificate and its Secret")
			}
		})
	}
}

func TestBuildIdentityCopy(t *testing.T) {
	src := &corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "ca.crt": []byte("a"), "extra": []byte("x")}}
	s := BuildIdentityCopy(testChassis("compute-a"), "hv-1", src)
	if len(s.Data) != 3 || s.Data["extra"] != nil || s.Annotations[nodeAnnotation] != "hv-1" || s.Labels[componentLabel] != IdentityComponent {
		t.Errorf("copy = %s %v %v %v", s.Name, s.Labels, s.Annotations, s.Data)
	}
	if IdentityHash(src) == IdentityHash(&corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("other")}}) {
		t.Error("two certificates hash the same")
	}
}

func TestStaleIdentity(t *testing.T) {
	entries := []NodeEntry{{Name: "kept"}, {Name: "leaving", Leaving: true}}
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"a rendered node's", map[string]string{nodeAnnotation: "kept"}, false},
		{"a leaving node's stays for its deletion", map[string]string{nodeAnnotation: "leaving"}, false},
		{"a node that is gone", map[string]string{nodeAnnotation: "gone"}, true},
		{"no node named: not an identity", nil, false},
	}
	for _, tt := range tests {
		if got := StaleIdentity(tt.annotations, entries); got != tt.want {
			t.Errorf("%s: stale = %v, want %v", tt.name, got, tt.want)
		}
	}
}
