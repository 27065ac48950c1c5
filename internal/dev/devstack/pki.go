package devstack

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The devstack's certificate lifetimes. The CA outlives any devstack anyone
// keeps; the serving certificate is renewed by `up` once it nears its end,
// and controller-runtime's certificate watcher picks up the new files
// without a restart of the operator.
const (
	caValidity      = 10 * 365 * 24 * time.Hour
	caRenewBefore   = 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	servingRenewBy  = 30 * 24 * time.Hour
	// clockSkew back-dates every certificate, so a peer whose clock is a
	// little behind does not reject a certificate issued a moment ago.
	clockSkew = time.Hour
)

// WebhookHost is the address the apiservers dial to reach the operator's
// webhook server. kwokctl's binary runtime runs them on this machine, so
// loopback reaches the operator.
const WebhookHost = "127.0.0.1"

// webhookDNSName is the second name on the serving certificate, for a client
// that dials localhost instead of the IP.
const webhookDNSName = "localhost"

// pkiDir holds the devstack's CA; its key never leaves this directory.
func (s *Stack) pkiDir() string { return filepath.Join(s.dir, "pki") }

// caCertPath is the devstack CA's certificate.
func (s *Stack) caCertPath() string { return filepath.Join(s.pkiDir(), "ca.crt") }

func (s *Stack) caKeyPath() string { return filepath.Join(s.pkiDir(), "ca.key") }

// webhookCertDir is the operator's --webhook-cert-dir: controller-runtime
// reads tls.crt and tls.key from it.
func (s *Stack) webhookCertDir() string { return filepath.Join(s.dir, "webhook-certs") }

// ensurePKI keeps the devstack CA and the webhook serving certificate it
// issued, and replaces either only when it is missing, broken or about to
// expire. Keeping them means a repeated `up` changes no caBundle.
func (s *Stack) ensurePKI(_ context.Context, _ *state) (string, error) {
	for _, d := range []string{s.pkiDir(), s.webhookCertDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
	}
	now := time.Now()
	caCert, _ := os.ReadFile(s.caCertPath())
	caKey, _ := os.ReadFile(s.caKeyPath())
	caState := "kept"
	if checkCA(caCert, caKey, now) != nil {
		var err error
		if caCert, caKey, err = newCA(now); err != nil {
			return "", err
		}
		if err := writeFileAtomic(s.caKeyPath(), caKey, 0o600); err != nil {
			return "", err
		}
		if err := writeFileAtomic(s.caCertPath(), caCert, 0o644); err != nil {
			return "", err
		}
		caState = "created"
	}

	crtPath := filepath.Join(s.webhookCertDir(), "tls.crt")
	keyPath := filepath.Join(s.webhookCertDir(), "tls.key")
	crt, _ := os.ReadFile(crtPath)
	key, _ := os.ReadFile(keyPath)
	servingState := "kept"
	if checkServing(caCert, crt, key, now) != nil {
		var err error
		if crt, key, err = issueServing(caCert, caKey, now); err != nil {
			return "", err
		}
		// The key goes first: the certificate watcher reloads on the
		// certificate's change and must then find the matching key.
		if err := writeFileAtomic(keyPath, key, 0o600); err != nil {
			return "", err
		}
		if err := writeFileAtomic(crtPath, crt, 0o644); err != nil {
			return "", err
		}
		servingState = "issued"
	}
	return fmt.Sprintf("CA %s (%s), webhook certificate for %s and %s (%s)",
		s.caCertPath(), caState, WebhookHost, webhookDNSName, servingState), nil
}

// newCA creates a self-signed ECDSA CA and returns its certificate and key
// as PEM.
func newCA(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Anvil devstack CA"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Path length zero: this CA signs leaf certificates only.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// issueServing signs a serving certificate for the webhook address with the
// CA and returns it and its new key as PEM.
func issueServing(caCertPEM, caKeyPEM []byte, now time.Time) (certPEM, keyPEM []byte, err error) {
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the devstack CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "anvil-operator webhook"},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(servingValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP(WebhookHost)},
		DNSNames:     []string{webhookDNSName},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// checkCA reports why a CA cannot be kept: missing, not a CA, a key that
// does not match, or less than caRenewBefore left, which would cut short
// the serving certificate it signs next.
func checkCA(certPEM, keyPEM []byte, now time.Time) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	if !cert.IsCA {
		return errors.New("not a CA certificate")
	}
	if now.Add(caRenewBefore).After(cert.NotAfter) {
		return fmt.Errorf("the CA expires at %s", cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// checkServing reports why a serving certificate cannot be kept: missing,
// a key that does not match, not signed by the CA, not valid for both
// webhook names, or less than servingRenewBy left.
func checkServing(caCertPEM, certPEM, keyPEM []byte, now time.Time) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caCertPEM) {
		return errors.New("no CA certificate to verify against")
	}
	for _, name := range []string{WebhookHost, webhookDNSName} {
		if _, err := cert.Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       pool,
			CurrentTime: now,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return err
		}
	}
	if now.Add(servingRenewBy).After(cert.NotAfter) {
		return fmt.Errorf("the serving certificate expires at %s", cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// caPool returns a pool holding the devstack CA, for clients that dial the
// webhook server.
func (s *Stack) caPool() (*x509.CertPool, []byte, error) {
	raw, err := os.ReadFile(s.caCertPath())
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", s.caCertPath())
	}
	return pool, raw, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// randomSerial returns a positive 128-bit serial number, as RFC 5280 asks
// serials to be unique per CA and unpredictable.
func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// writeFileAtomic replaces path in one rename, so a reader never sees half
// a key or certificate. Unchanged content is not rewritten.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
