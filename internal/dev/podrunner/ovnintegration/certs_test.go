package ovnintegration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is a CA with one server and one client certificate, shaped like
// cert-manager's Secrets: tls.crt, tls.key and ca.crt.
type pki struct {
	ca     []byte
	server map[string][]byte
	client map[string][]byte
	// chassis is the chassis node's own identity, named by its system-id,
	// as the Southbound's RBAC role wants it.
	chassis map[string][]byte
}

// newPKI issues the certificates. Raft members dial each other with the
// server certificate, so it carries clientAuth as well as serverAuth; OVS
// enforces the extended key usage, not the name, so the SAN is arbitrary.
func newPKI(t *testing.T) pki {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ovn-integration-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, cn string, usages ...x509.ExtKeyUsage) map[string][]byte {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			DNSNames:     []string{cn + ".ovn.invalid"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usages,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return map[string][]byte{
			"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
			"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		}
	}
	return pki{
		ca:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		server:  issue(2, "ovn-server", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth),
		client:  issue(3, "ovn-client", x509.ExtKeyUsageClientAuth),
		chassis: issue(4, chassisID, x509.ExtKeyUsageClientAuth),
	}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// clientFiles writes the client certificate for the test's own ovn-nbctl
// and ovn-sbctl and returns their -p, -c and -C arguments.
func (p pki) clientFiles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range p.client {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"-p", filepath.Join(dir, "tls.key"), "-c", filepath.Join(dir, "tls.crt"), "-C", filepath.Join(dir, "ca.crt")}
}
