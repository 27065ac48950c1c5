package ovncentral

import (
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// tlsKeys are the keys every certificate Secret must carry before anything
// mounts it, in the order they are checked.
var tlsKeys = []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, cmmeta.TLSCAKey}

// Usages of the certificates. Raft members dial each other with their
// server certificate, and OVS enforces extended key usage on both ends, so a
// database's certificate is both a server and a client certificate.
var (
	serverUsages = []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment, cmv1.UsageServerAuth, cmv1.UsageClientAuth}
	clientUsages = []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment, cmv1.UsageClientAuth}
)

// caDuration is how long the central's own CA certificate is valid.
// Renewal keeps its key (RotationPolicyNever), so certificates signed
// before a renewal still verify against the renewed CA and nothing has to
// restart in step; the long life only makes renewals rare.
const caDuration = 10 * 365 * 24 * time.Hour

// OwnCAName is the central's own CA: its Certificate, Secret and CA Issuer,
// {central}-ca.
func OwnCAName(c *ovnv1alpha1.OVNCentral) string { return c.OwnCAName() }

// selfSignedName is the SelfSigned Issuer that signs the central's CA,
// {central}-selfsigned.
func selfSignedName(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-selfsigned" }

// leafIssuer is the issuer of every server and client certificate, in
// cert-manager's form; the chassis identities use the same one.
func leafIssuer(c *ovnv1alpha1.OVNCentral) cmmeta.IssuerReference {
	ref := c.LeafIssuer()
	return cmmeta.IssuerReference{Name: ref.Name, Kind: ref.Kind, Group: cmv1.SchemeGroupVersion.Group}
}

// BuildOwnCA returns the central's own trust root when the spec names no
// issuer: a SelfSigned Issuer, the CA Certificate it signs and the CA
// Issuer on that Certificate's Secret. A self-signed root of the central's
// own is the only trust anchor ovsdb-server accepts that no other central
// shares: OVS does not take an intermediate as an anchor, and with a shared
// root above it a client that sends its chain gets in (docs/design/ovn.md).
// It returns nil when the spec names an issuer.
func BuildOwnCA(c *ovnv1alpha1.OVNCentral) (*cmv1.Issuer, *cmv1.Certificate, *cmv1.Issuer) {
	if c.Spec.TLS.IssuerRef != nil {
		return nil, nil, nil
	}
	selfSigned := buildIssuer(c, selfSignedName(c))
	selfSigned.Spec.SelfSigned = &cmv1.SelfSignedIssuer{}
	ca := buildCertificate(c, OwnCAName(c), "ca", nil, nil)
	ca.Spec.IsCA = true
	ca.Spec.Duration = &metav1.Duration{Duration: caDuration}
	ca.Spec.PrivateKey.RotationPolicy = cmv1.RotationPolicyNever
	ca.Spec.IssuerRef = cmmeta.IssuerReference{Name: selfSigned.Name, Kind: cmv1.IssuerKind, Group: cmv1.SchemeGroupVersion.Group}
	caIssuer := buildIssuer(c, OwnCAName(c))
	caIssuer.Spec.CA = &cmv1.CAIssuer{SecretName: OwnCAName(c)}
	return selfSigned, ca, caIssuer
}

// ownCAObjects are the objects BuildOwnCA writes, empty but for their
// names: what a central that names an issuer deletes.
func ownCAObjects(c *ovnv1alpha1.OVNCentral) []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: c.Namespace, Name: name} }
	return []client.Object{
		&cmv1.Issuer{ObjectMeta: meta(OwnCAName(c))},
		&cmv1.Certificate{ObjectMeta: meta(OwnCAName(c))},
		&cmv1.Issuer{ObjectMeta: meta(selfSignedName(c))},
	}
}

// buildIssuer is an Issuer of the central's namespace with its labels.
func buildIssuer(c *ovnv1alpha1.OVNCentral, name string) *cmv1.Issuer {
	return &cmv1.Issuer{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.IssuerKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c, "ca")},
	}
}

// BuildCertificates returns the Certificates the central needs: one server
// certificate per database, the relay's while it runs, and the client
// identity every consumer presents.
func BuildCertificates(c *ovnv1alpha1.OVNCentral) []*cmv1.Certificate {
	certs := make([]*cmv1.Certificate, 0, 4)
	for _, d := range databases {
		certs = append(certs, buildCertificate(c, d.ServerSecretName(c), d.Short, serverUsages, databaseDNSNames(c, d)))
	}
	if c.Spec.Relay != nil {
		name := RelayName(c)
		certs = append(certs, buildCertificate(c, name, "sb-relay", serverUsages, serviceDNSNames(c, name)))
	}
	return append(certs, buildCertificate(c, ClientSecretName(c), "client", clientUsages, nil))
}

// buildCertificate is one Certificate whose Secret has the same name.
func buildCertificate(c *ovnv1alpha1.OVNCentral, name, component string, usages []cmv1.KeyUsage, dnsNames []string) *cmv1.Certificate {
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c, component)},
		Spec: cmv1.CertificateSpec{
			SecretName: name,
			CommonName: name,
			DNSNames:   dnsNames,
			Usages:     usages,
			IssuerRef:  leafIssuer(c),
			// A renewal gets a new key; a leaked key then expires with its
			// certificate.
			PrivateKey: &cmv1.CertificatePrivateKey{
				Algorithm:      cmv1.ECDSAKeyAlgorithm,
				Size:           256,
				RotationPolicy: cmv1.RotationPolicyAlways,
			},
			// Labels on the Secret let the chassis's Secret watch find the
			// central whose identity changed.
			SecretTemplate: &cmv1.CertificateSecretTemplate{Labels: labels(c, component)},
		},
	}
}

// databaseDNSNames are the names a database is dialled by: its headless
// Service, each member under it, and each member's own Service. OVS does
// not check them, but other TLS clients may.
func databaseDNSNames(c *ovnv1alpha1.OVNCentral, d Database) []string {
	names := serviceDNSNames(c, d.Name(c))
	names = append(names, "*."+d.Name(c)+"."+c.Namespace+"."+clusterLocal)
	for i := range d.Spec(c).ResolvedReplicas() {
		names = append(names, serviceDNSNames(c, d.MemberName(c, i))...)
	}
	return names
}

// serviceDNSNames are a Service's short, namespaced and full names.
func serviceDNSNames(c *ovnv1alpha1.OVNCentral, service string) []string {
	return []string{
		service,
		service + "." + c.Namespace + ".svc",
		service + "." + c.Namespace + "." + clusterLocal,
	}
}

// CertificateState is what a Certificate and its Secret say about
// issuance.
type CertificateState int

// The states DecideCertificate returns.
const (
	// CertificateIssued: cert-manager reports the Certificate Ready for its
	// current generation and the Secret carries every key.
	CertificateIssued CertificateState = iota
	// CertificateWaiting: issuance is in progress or not started.
	CertificateWaiting
	// CertificateFailed: cert-manager gave up on the current request.
	CertificateFailed
)

// DecideCertificate classifies one Certificate from what cert-manager
// reported and the Secret's keys; missing is the first key the Secret lacks
// ("" when none, or when the Secret is absent: then secretFound is false).
func DecideCertificate(cert *cmv1.Certificate, secretFound bool, missing string) (CertificateState, string) {
	for _, cond := range cert.Status.Conditions {
		if cond.Type == cmv1.CertificateConditionIssuing && cond.Status == cmmeta.ConditionFalse && cond.Reason == "Failed" {
			return CertificateFailed, "certificate " + cert.Name + " failed to issue: " + cond.Message
		}
	}
	ready := false
	for _, cond := range cert.Status.Conditions {
		if cond.Type == cmv1.CertificateConditionReady && cond.Status == cmmeta.ConditionTrue &&
			cond.ObservedGeneration == cert.Generation {
			ready = true
		}
	}
	switch {
	case !ready:
		return CertificateWaiting, "certificate " + cert.Name + " is not issued yet"
	case !secretFound:
		return CertificateWaiting, "Secret " + cert.Spec.SecretName + " does not exist yet"
	case missing != "":
		return CertificateWaiting, "Secret " + cert.Spec.SecretName + " carries no " + missing + " yet"
	}
	return CertificateIssued, ""
}

// missingKey returns the first of tlsKeys s lacks or holds empty.
func missingKey(s *corev1.Secret) string {
	for _, k := range tlsKeys {
		if len(s.Data[k]) == 0 {
			return k
		}
	}
	return ""
}
