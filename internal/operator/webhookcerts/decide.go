package webhookcerts

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"time"
)

// The points in a certificate's life where the rotator acts, as fractions
// of the whole life. They are fractions rather than fixed margins so that
// the same rules hold for a two-year CA and for the seconds-long ones the
// integration test uses.
const (
	// renewNumerator/renewDenominator: a serving certificate is replaced
	// after two thirds of its life, leaving a third for retries, a slow
	// leader election or a stuck watch.
	renewNumerator, renewDenominator = 2, 3
	// rotateNumerator/rotateDenominator: a CA's successor is made after two
	// thirds of its life and put into the caBundle next to it.
	rotateNumerator, rotateDenominator = 2, 3
	// promoteNumerator/promoteDenominator: the successor starts signing
	// after five sixths, so it has been trusted for a sixth of the CA's
	// life before anything it signed is served.
	promoteNumerator, promoteDenominator = 5, 6
	// retireSettle is how long after the new CA's first serving
	// certificate the CA it replaced stays trusted: every replica's
	// informer delivers the Secret within seconds, and the settle covers
	// a slow one. A replaced CA's key is no longer needed, and trusting it
	// longer only widens what a leak of it would open.
	retireSettle = 10 * time.Minute
)

// at returns the point num/den into c's validity.
func at(c *x509.Certificate, num, den int64) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(time.Duration(int64(life) / den * num))
}

// RenewAt is when a serving certificate is due for renewal.
func RenewAt(c *x509.Certificate) time.Time { return at(c, renewNumerator, renewDenominator) }

// RotateAt is when a CA's successor is made and trusted.
func RotateAt(c *x509.Certificate) time.Time { return at(c, rotateNumerator, rotateDenominator) }

// PromoteAt is when a CA's successor, once trusted, starts signing.
func PromoteAt(c *x509.Certificate) time.Time { return at(c, promoteNumerator, promoteDenominator) }

// CAAction is what the CA needs.
type CAAction int

const (
	// CAKeep leaves the CAs as they are.
	CAKeep CAAction = iota
	// CAReplace makes a new signing CA at once: there is none, or it has
	// expired, so the webhooks are failing anyway and waiting helps nobody.
	CAReplace
	// CAStartRotation makes the successor CA and trusts it next to the
	// signing one; nothing it signs is served yet.
	CAStartRotation
	// CAPromote makes the successor the signing CA; the serving
	// certificate is then reissued by it.
	CAPromote
)

// String names the action in logs.
func (a CAAction) String() string {
	switch a {
	case CAReplace:
		return "replace"
	case CAStartRotation:
		return "start rotation"
	case CAPromote:
		return "promote successor"
	default:
		return "keep"
	}
}

// DecideCA says what the CAs need at now. ca is the signing CA and next its
// successor, either nil when missing or unusable. nextTrusted says whether
// every webhook's caBundle already holds next: the successor must not sign
// a served certificate before the apiserver trusts it.
func DecideCA(now time.Time, ca, next *x509.Certificate, nextTrusted bool) CAAction {
	switch {
	case ca == nil || !now.Before(ca.NotAfter):
		return CAReplace
	case next == nil || !now.Before(next.NotAfter):
		if !now.Before(RotateAt(ca)) {
			return CAStartRotation
		}
		return CAKeep
	case !now.Before(PromoteAt(ca)) && nextTrusted:
		return CAPromote
	default:
		return CAKeep
	}
}

// RetireAt is when the CAs a promotion replaced leave the bundle: the
// settle time after serving was issued (NotBefore is backdated; see
// issue), or a third of its life when that is shorter, as with the
// lifetimes of seconds of the integration tests.
func RetireAt(serving *x509.Certificate) time.Time {
	life := serving.NotAfter.Sub(serving.NotBefore)
	issued := serving.NotBefore.Add(min(maxBackdate, life/11))
	return issued.Add(min(retireSettle, life/3))
}

// DecideRetire says whether the bundle drops every CA besides signer and
// its successor at now: serving is signed by signer, it is the one the
// webhook serves (served), and it has been out for RetireAt.
func DecideRetire(now time.Time, serving, signer *x509.Certificate, served bool) bool {
	return served && serving != nil && signer != nil && serving.CheckSignatureFrom(signer) == nil && !now.Before(RetireAt(serving))
}

// DecideRenewal says whether the serving certificate must be reissued at
// now, and why. It must be when it is missing, expired or past RenewAt,
// when signer did not sign it (after a new or promoted CA), or when it no
// longer names exactly hosts.
func DecideRenewal(now time.Time, serving, signer *x509.Certificate, hosts []string) (bool, string) {
	switch {
	case serving == nil:
		return true, "no serving certificate"
	case signer == nil || serving.CheckSignatureFrom(signer) != nil:
		return true, "not signed by the current CA"
	case !sameHosts(serving, hosts):
		return true, "the host names changed"
	case !now.Before(serving.NotAfter):
		return true, "expired"
	case !now.Before(RenewAt(serving)):
		return true, "due for renewal"
	default:
		return false, ""
	}
}

// sameHosts reports whether c names exactly hosts, as DNS names or IPs.
func sameHosts(c *x509.Certificate, hosts []string) bool {
	dns, ips := splitHosts(hosts)
	if !slices.Equal(sortedCopy(c.DNSNames), sortedCopy(dns)) || len(c.IPAddresses) != len(ips) {
		return false
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// splitHosts separates IP addresses from DNS names.
func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// BuildBundle returns the CAs the webhook configuration must trust at now,
// PEM-encoded: every CA of previous that has not expired, since a replica
// may still serve what such a CA signed, unless retire says none does any
// more (DecideRetire); then the signing CA and its successor when previous
// lacks them. New CAs are appended, so the order survives a rotation and a
// promotion, and an unchanged state gives the same bytes and no write.
func BuildBundle(now time.Time, signer, next *x509.Certificate, previous []*x509.Certificate, retire bool) []byte {
	if retire {
		previous = slices.DeleteFunc(slices.Clone(previous), func(c *x509.Certificate) bool { return replaced(c, signer, next) })
	}
	var out bytes.Buffer
	var seen [][]byte
	add := func(c *x509.Certificate) {
		if c == nil || !c.IsCA || !now.Before(c.NotAfter) || slices.ContainsFunc(seen, func(r []byte) bool { return bytes.Equal(r, c.Raw) }) {
			return
		}
		seen = append(seen, c.Raw)
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	for _, c := range previous {
		add(c)
	}
	add(signer)
	add(next)
	return out.Bytes()
}

// replaced tells whether c is neither the signing CA ca nor its successor
// next, either of which may be nil: a CA a promotion left behind.
func replaced(c, ca, next *x509.Certificate) bool {
	return (ca == nil || !c.Equal(ca)) && (next == nil || !c.Equal(next))
}

// BundleHolds reports whether the PEM bundle contains c.
func BundleHolds(bundle []byte, c *x509.Certificate) bool {
	return c != nil && slices.ContainsFunc(ParseCertificates(bundle), func(b *x509.Certificate) bool { return b.Equal(c) })
}

// ParseCertificates returns every certificate of a PEM bundle, skipping
// blocks that are not certificates or do not parse.
func ParseCertificates(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// NextDue is the earliest time after which a pass may have something to
// do: the serving certificate's renewal, the CA's rotation or promotion,
// the retirement of a replaced CA, or the expiry of a CA in the bundle,
// which then leaves it.
func NextDue(serving, ca, next *x509.Certificate, bundle []*x509.Certificate) time.Time {
	var due []time.Time
	if serving != nil {
		due = append(due, RenewAt(serving))
		if slices.ContainsFunc(bundle, func(c *x509.Certificate) bool { return replaced(c, ca, next) }) {
			due = append(due, RetireAt(serving))
		}
	}
	if ca != nil {
		if next == nil {
			due = append(due, RotateAt(ca))
		} else {
			due = append(due, PromoteAt(ca))
		}
	}
	for _, c := range bundle {
		due = append(due, c.NotAfter)
	}
	if len(due) == 0 {
		return time.Time{}
	}
	return slices.MinFunc(due, func(a, b time.Time) int { return a.Compare(b) })
}
