package webhookcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// maxBackdate bounds how far before its issue a certificate is valid, to
// absorb clock skew between the operator and the apiserver.
const maxBackdate = 5 * time.Minute

// KeyPair is a certificate with its private key, PEM-encoded as stored in
// the Secret and in the certificate directory. The key is never logged,
// put in an event or in an error.
type KeyPair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
	key     crypto.Signer
}

// parseKeyPair reads a certificate and its key, or returns nil when either
// is missing, does not parse or the two do not belong together. A broken
// pair is as good as none: the caller issues a new one.
func parseKeyPair(certPEM, keyPEM []byte) *KeyPair {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil || pair.Leaf == nil {
		return nil
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil
	}
	return &KeyPair{Cert: pair.Leaf, CertPEM: certPEM, KeyPEM: keyPEM, key: signer}
}

// newCA makes a self-signed CA valid for validity from now.
func newCA(now time.Time, commonName string, validity time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs only leaf serving certificates.
		MaxPathLenZero: true,
	}
	return issue(now, validity, tmpl, nil)
}

// newServing makes a serving certificate for hosts signed by ca, valid for
// validity from now but never past the CA, whose end would cut it short
// anyway.
func newServing(now time.Time, ca *KeyPair, hosts []string, validity time.Duration) (*KeyPair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("no host names for the serving certificate")
	}
	dns, ips := splitHosts(hosts)
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		DNSNames:    dns,
		IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if end := ca.Cert.NotAfter.Sub(now); end < validity {
		validity = end
	}
	return issue(now, validity, tmpl, ca)
}

// issue fills in the serial, validity and key of tmpl and signs it with
// parent, or with its own key when parent is nil.
func issue(now time.Time, validity time.Duration, tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	if validity <= 0 {
		return nil, errors.New("validity must be positive")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-min(maxBackdate, validity/10))
	tmpl.NotAfter = now.Add(validity)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	skid := sha256.Sum256(pub)
	tmpl.SubjectKeyId = skid[:20]
	parentCert, parentKey := tmpl, crypto.Signer(key)
	if parent != nil {
		parentCert, parentKey = parent.Cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		// The message is the library's and names no key material.
		return nil, fmt.Errorf("encoding the key: %w", err)
	}
	return &KeyPair{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		key:     key,
	}, nil
}
