package webhookcerts

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The keys of the Secret. tls.crt and tls.key are what every replica
// serves; the rest only the leader needs.
const (
	// KeyServingCert is the serving certificate.
	KeyServingCert = corev1.TLSCertKey
	// KeyServingKey is the serving certificate's private key.
	KeyServingKey = corev1.TLSPrivateKeyKey
	// KeyCACert is the CA that signs the serving certificate.
	KeyCACert = "ca.crt"
	// KeyCAKey is that CA's private key.
	KeyCAKey = "ca.key"
	// KeyNextCACert is the CA that takes over from ca.crt during a
	// rotation; it is trusted before it signs anything.
	KeyNextCACert = "next-ca.crt"
	// KeyNextCAKey is its private key.
	KeyNextCAKey = "next-ca.key"
	// KeyBundle is every CA the webhook configuration must trust, as it
	// is written into each webhook's caBundle.
	KeyBundle = "ca-bundle.crt"
)

// Lifetimes are how long the certificates the operator issues are valid.
type Lifetimes struct {
	// CA is the validity of each CA.
	CA time.Duration
	// Serving is the validity of a serving certificate; it is cut to the
	// signing CA's end when that comes first.
	Serving time.Duration
}

// DefaultLifetimes are a serving certificate for 90 days, renewed after
// 60, and a CA for two years, with a successor trusted after 16 months and
// signing after 20.
var DefaultLifetimes = Lifetimes{CA: 2 * 365 * 24 * time.Hour, Serving: 90 * 24 * time.Hour}

// State is the content of the Secret, parsed. A missing or broken pair is
// nil.
type State struct {
	CA      *KeyPair
	NextCA  *KeyPair
	Serving *KeyPair
	// Bundle is the stored ca-bundle.crt.
	Bundle []byte
}

// stateFromData parses a Secret's data.
func stateFromData(data map[string][]byte) State {
	return State{
		CA:      parseKeyPair(data[KeyCACert], data[KeyCAKey]),
		NextCA:  parseKeyPair(data[KeyNextCACert], data[KeyNextCAKey]),
		Serving: parseKeyPair(data[KeyServingCert], data[KeyServingKey]),
		Bundle:  data[KeyBundle],
	}
}

// data is the Secret's data for s. Keys of a pair that is nil are left
// out.
func (s State) data() map[string][]byte {
	out := map[string][]byte{}
	put := func(p *KeyPair, certKey, keyKey string) {
		if p != nil {
			out[certKey], out[keyKey] = p.CertPEM, p.KeyPEM
		}
	}
	put(s.CA, KeyCACert, KeyCAKey)
	put(s.NextCA, KeyNextCACert, KeyNextCAKey)
	put(s.Serving, KeyServingCert, KeyServingKey)
	if len(s.Bundle) > 0 {
		out[KeyBundle] = s.Bundle
	}
	return out
}

// sameData reports whether two Secret data maps hold the same bytes.
func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// cert returns the certificate of p, or nil for a nil pair.
func cert(p *KeyPair) *x509.Certificate {
	if p == nil {
		return nil
	}
	return p.Cert
}

// Advance returns the state s must become at now, and what changed, in
// words for the log. nextTrusted says whether every webhook already trusts
// s.NextCA; served, whether this replica's webhook serves s.Serving. A
// state with nothing due is returned unchanged, so the caller writes
// nothing.
func Advance(now time.Time, s State, hosts []string, life Lifetimes, commonName string, nextTrusted, served bool) (State, []string, error) {
	var changes []string
	previous := ParseCertificates(s.Bundle)
	switch DecideCA(now, cert(s.CA), cert(s.NextCA), nextTrusted) {
	case CAReplace:
		ca, err := newCA(now, commonName, life.CA)
		if err != nil {
			return s, nil, fmt.Errorf("making a CA: %w", err)
		}
		s.CA, s.NextCA = ca, nil
		changes = append(changes, "made a new CA")
	case CAStartRotation:
		next, err := newCA(now, commonName, life.CA)
		if err != nil {
			return s, nil, fmt.Errorf("making the successor CA: %w", err)
		}
		s.NextCA = next
		changes = append(changes, "made the successor CA and trusted it")
	case CAPromote:
		// The old CA stays in previous, so it stays trusted until the new
		// CA's serving certificate has been out for a while
		// (DecideRetire), or until it expires.
		previous = append(previous, s.CA.Cert)
		s.CA, s.NextCA = s.NextCA, nil
		changes = append(changes, "the successor CA now signs")
	}
	// Only a serving certificate that was already out counts for the
	// retirement, never one this pass issues.
	retire := DecideRetire(now, cert(s.Serving), s.CA.Cert, served)
	if renew, why := DecideRenewal(now, cert(s.Serving), s.CA.Cert, hosts); renew {
		serving, err := newServing(now, s.CA, hosts, life.Serving)
		if err != nil {
			return s, nil, fmt.Errorf("issuing the serving certificate: %w", err)
		}
		s.Serving = serving
		retire = false
		changes = append(changes, "issued a serving certificate: "+why)
	}
	if bundle := BuildBundle(now, s.CA.Cert, cert(s.NextCA), previous, retire); !bytes.Equal(bundle, s.Bundle) {
		s.Bundle = bundle
		changes = append(changes, "updated the CA bundle")
	}
	return s, changes, nil
}

// NextDue is when s next has something due; see the package function.
func (s State) NextDue() time.Time {
	return NextDue(cert(s.Serving), cert(s.CA), cert(s.NextCA), ParseCertificates(s.Bundle))
}
