package webhookcerts

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

// t0 is an arbitrary start; the functions under test take the time as an
// argument.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// mustCA makes a CA at now for life.
func mustCA(t *testing.T, now time.Time, life time.Duration) *KeyPair {
	t.Helper()
	ca, err := newCA(now, "test-ca", life)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// mustServing issues a serving certificate for hosts from ca.
func mustServing(t *testing.T, now time.Time, ca *KeyPair, life time.Duration, hosts ...string) *KeyPair {
	t.Helper()
	s, err := newServing(now, ca, hosts, life)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDecideRenewal(t *testing.T) {
	const day = 24 * time.Hour
	ca := mustCA(t, t0, 720*day)
	other := mustCA(t, t0, 720*day)
	hosts := []string{"svc.ns.svc", "127.0.0.1"}
	serving := mustServing(t, t0, ca, 90*day, hosts...)
	tests := []struct {
		name    string
		now     time.Time
		serving *KeyPair
		signer  *KeyPair
		hosts   []string
		want    bool
		why     string
	}{
		{"fresh", t0, serving, ca, hosts, false, ""},
		{"hosts in another order", t0, serving, ca, []string{"127.0.0.1", "svc.ns.svc"}, false, ""},
		{"just before two thirds", t0.Add(59 * day), serving, ca, hosts, false, ""},
		{"at two thirds", RenewAt(serving.Cert), serving, ca, hosts, true, "due for renewal"},
		{"expired", t0.Add(91 * day), serving, ca, hosts, true, "expired"},
		{"missing", t0, nil, ca, hosts, true, "no serving certificate"},
		{"signed by another CA", t0, serving, other, hosts, true, "not signed by the current CA"},
		{"no CA", t0, serving, nil, hosts, true, "not signed by the current CA"},
		{"a host added", t0, serving, ca, append([]string{"svc.ns.svc.cluster.local"}, hosts...), true, "the host names changed"},
		{"an IP changed", t0, serving, ca, []string{"svc.ns.svc", "10.0.0.1"}, true, "the host names changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := DecideRenewal(tt.now, cert(tt.serving), cert(tt.signer), tt.hosts)
			if got != tt.want || why != tt.why {
				t.Errorf("DecideRenewal = %v %q, want %v %q", got, why, tt.want, tt.why)
			}
		})
	}
}

func TestDecideCA(t *testing.T) {
	const life = 600 * time.Hour
	ca := mustCA(t, t0, life)
	next := mustCA(t, RotateAt(ca.Cert), life)
	tests := []struct {
		name        string
		now         time.Time
		ca, next    *KeyPair
		nextTrusted bool
		want        CAAction
	}{
		{"no CA", t0, nil, nil, false, CAReplace},
		{"no CA but a successor", t0, nil, next, true, CAReplace},
		{"expired", ca.Cert.NotAfter, ca, nil, false, CAReplace},
		{"young", t0, ca, nil, false, CAKeep},
		{"before two thirds", RotateAt(ca.Cert).Add(-time.Second), ca, nil, false, CAKeep},
		{"at two thirds", RotateAt(ca.Cert), ca, nil, false, CAStartRotation},
		{"successor trusted, too early", PromoteAt(ca.Cert).Add(-time.Second), ca, next, true, CAKeep},
		{"successor trusted, due", PromoteAt(ca.Cert), ca, next, true, CAPromote},
		{"successor not trusted yet", PromoteAt(ca.Cert), ca, next, false, CAKeep},
		{"successor expired", next.Cert.NotAfter, ca, next, true, CAReplace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideCA(tt.now, cert(tt.ca), cert(tt.next), tt.nextTrusted); got != tt.want {
				t.Errorf("DecideCA = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBuildBundle(t *testing.T) {
	const life = 600 * time.Hour
	a := mustCA(t, t0, life)
	b := mustCA(t, t0.Add(400*time.Hour), life)
	c := mustCA(t, t0.Add(500*time.Hour), life)
	leaf := mustServing(t, t0, a, time.Hour, "x")
	tests := []struct {
		name     string
		now      time.Time
		signer   *KeyPair
		next     *KeyPair
		previous []*KeyPair
		retire   bool
		want     []*KeyPair
	}{
		{"signer only", t0, a, nil, nil, false, []*KeyPair{a}},
		{"with successor", t0, a, b, nil, false, []*KeyPair{a, b}},
		{"replaced CA kept until retired, order kept", t0.Add(500 * time.Hour), b, nil, []*KeyPair{a, b}, false, []*KeyPair{a, b}},
		{"replaced CA retired", t0.Add(500 * time.Hour), b, nil, []*KeyPair{a, b}, true, []*KeyPair{b}},
		{"retiring keeps the successor", t0.Add(500 * time.Hour), b, c, []*KeyPair{a, b, c}, true, []*KeyPair{b, c}},
		{"new CAs appended", t0, a, b, []*KeyPair{a}, false, []*KeyPair{a, b}},
		{"expired CA dropped", a.Cert.NotAfter, b, c, []*KeyPair{a, b}, false, []*KeyPair{b, c}},
		{"duplicates once", t0, a, nil, []*KeyPair{a, a}, false, []*KeyPair{a}},
		{"a leaf is no CA", t0, a, nil, []*KeyPair{leaf}, false, []*KeyPair{a}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var previous []*x509.Certificate
			for _, p := range tt.previous {
				previous = append(previous, p.Cert)
			}
			got := BuildBundle(tt.now, cert(tt.signer), cert(tt.next), previous, tt.retire)
			var want []byte
			for _, p := range tt.want {
				want = append(want, p.CertPEM...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("bundle holds %d CAs, want %d in order", len(ParseCertificates(got)), len(tt.want))
			}
			if again := BuildBundle(tt.now, cert(tt.signer), cert(tt.next), ParseCertificates(got), tt.retire); !bytes.Equal(again, got) {
				t.Error("rebuilding the bundle from itself changed it; a settled state would write")
			}
		})
	}
}

func TestNextDue(t *testing.T) {
	const life = 600 * time.Hour
	ca := mustCA(t, t0, life)
	next := mustCA(t, RotateAt(ca.Cert), life)
	serving := mustServing(t, t0, ca, 60*time.Hour, "x")
	promoted := mustServing(t, PromoteAt(ca.Cert), next, 60*time.Hour, "x")
	bundle := []*x509.Certificate{ca.Cert}
	tests := []struct {
		name string
		got  time.Time
		want time.Time
	}{
		{"serving renewal first", NextDue(serving.Cert, ca.Cert, nil, bundle), RenewAt(serving.Cert)},
		{"rotation without serving", NextDue(nil, ca.Cert, nil, bundle), RotateAt(ca.Cert)},
		{"promotion with a successor", NextDue(nil, ca.Cert, next.Cert, bundle), PromoteAt(ca.Cert)},
		{"retirement of a replaced CA", NextDue(promoted.Cert, next.Cert, nil, []*x509.Certificate{ca.Cert, next.Cert}), RetireAt(promoted.Cert)},
		{"nothing", NextDue(nil, nil, nil, nil), time.Time{}},
	}
	for _, tt := range tests {
		if !tt.got.Equal(tt.want) {
			t.Errorf("%s: NextDue = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestRetireAt(t *testing.T) {
	ca := mustCA(t, t0, 600*time.Hour)
	tests := []struct {
		name     string
		validity time.Duration
		want     time.Duration
	}{
		{"the settle time after issue", 90 * time.Hour, retireSettle},
		{"a third of a short life", 660 * time.Second, 242 * time.Second},
	}
	for _, tt := range tests {
		s := mustServing(t, t0, ca, tt.validity, "x")
		if got := RetireAt(s.Cert).Sub(t0); got != tt.want {
			t.Errorf("%s: RetireAt is %s after issue, want %s", tt.name, got, tt.want)
		}
	}
}

func TestDecideRetire(t *testing.T) {
	const life = 600 * time.Hour
	ca := mustCA(t, t0, life)
	other := mustCA(t, t0, life)
	serving := mustServing(t, t0, ca, 90*time.Hour, "x")
	at := RetireAt(serving.Cert)
	tests := []struct {
		name    string
		now     time.Time
		serving *KeyPair
		signer  *KeyPair
		served  bool
		want    bool
	}{
		{"served and settled", at, serving, ca, true, true},
		{"before the settle time", at.Add(-time.Second), serving, ca, true, false},
		{"not served by this replica", at, serving, ca, false, false},
		{"signed by another CA", at, serving, other, true, false},
		{"no serving certificate", at, nil, ca, true, false},
	}
	for _, tt := range tests {
		if got := DecideRetire(tt.now, cert(tt.serving), cert(tt.signer), tt.served); got != tt.want {
			t.Errorf("%s: DecideRetire = %t, want %t", tt.name, got, tt.want)
		}
	}
}

func TestServingNeverOutlivesItsCA(t *testing.T) {
	ca := mustCA(t, t0, 10*time.Hour)
	s := mustServing(t, t0.Add(9*time.Hour), ca, 5*time.Hour, "x")
	if s.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("serving certificate ends %s, after its CA %s", s.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

// Advance, run through three CA lifetimes, never serves a certificate
// whose CA the webhook configuration did not already trust, always serves
// a valid one, and writes nothing when run twice at the same time.
func TestAdvanceRotatesWithoutOutage(t *testing.T) {
	life := Lifetimes{CA: 600 * time.Hour, Serving: 90 * time.Hour}
	hosts := []string{"svc.ns.svc"}
	var s State
	published := []byte(nil) // the caBundle the apiserver holds
	rotations := 0
	for now := t0; now.Before(t0.Add(3 * life.CA)); now = now.Add(7 * time.Hour) {
		trusted := s.NextCA != nil && BundleHolds(published, s.NextCA.Cert)
		next, changes, err := Advance(now, s, hosts, life, "test", trusted, true)
		if err != nil {
			t.Fatal(err)
		}
		if s.CA != nil && next.CA != s.CA {
			rotations++
		}
		if !now.Equal(t0) && next.Serving != s.Serving {
			roots := x509.NewCertPool()
			for _, c := range ParseCertificates(published) {
				roots.AddCert(c)
			}
			if _, err := next.Serving.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: hosts[0], CurrentTime: now}); err != nil {
				t.Fatalf("%s: a new serving certificate (%s) is not trusted by the published bundle: %v", now.Sub(t0), strings.Join(changes, "; "), err)
			}
		}
		if now.Before(next.Serving.Cert.NotBefore) || !now.Before(next.Serving.Cert.NotAfter) {
			t.Fatalf("%s: the serving certificate is not valid", now.Sub(t0))
		}
		if _, again, _ := Advance(now, next, hosts, life, "test", trusted, true); len(again) > 0 {
			t.Fatalf("%s: a second pass changes %v", now.Sub(t0), again)
		}
		// A replaced CA leaves the bundle once the new one's serving
		// certificate has settled, long before the CA expires.
		if DecideRetire(now, next.Serving.Cert, next.CA.Cert, true) {
			for _, c := range ParseCertificates(next.Bundle) {
				if !c.Equal(next.CA.Cert) && (next.NextCA == nil || !c.Equal(next.NextCA.Cert)) {
					t.Fatalf("%s: the bundle still trusts a replaced CA", now.Sub(t0))
				}
			}
		}
		s, published = next, next.Bundle
	}
	if rotations < 2 {
		t.Errorf("%d CA rotations in three CA lifetimes, want at least 2", rotations)
	}
}
