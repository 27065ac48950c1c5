package ovncentral

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	ref := c.Spec.TLS.IssuerRef
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c, component)},
		Spec: cmv1.CertificateSpec{
			SecretName: name,
			CommonName: name,
			DNSNames:   dnsNames,
			Usages:     usages,
			IssuerRef:  cmmeta.IssuerReference{Name: ref.Name, Kind: ref.ResolvedKind(), Group: "cert-manager.io"},
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
