package ovnchassis

import (
	"crypto/sha256"
	"encoding/hex"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// IdentityComponent labels what makes up one node's chassis identity: its
// Certificate and Secret on the management cluster, the Secret's copy on
// the chassis's cluster, and the Job that installs it on the node.
const IdentityComponent = "identity"

// hostTLSPath is the directory on a node that holds its chassis identity.
// Only that node's identity Job writes it; ovn-controller and the metadata
// agent on the node read it. It lies outside /etc/ovn/tls, where the
// containers mount it, so a node's files never meet a Secret volume.
const hostTLSPath = ovnv1alpha1.ChassisIdentityHostPath

// identityMountPath is where the identity Job mounts the node's Secret.
const identityMountPath = "/etc/ovn/identity"

// IdentityName is one node's identity Certificate, its Secret, the Secret's
// copy and the identity Job: {chassis}-identity-{first 8 hex of
// sha256(node)}.
func IdentityName(c *ovnv1alpha1.OVNChassis, node string) string {
	return JobName(c, IdentityJob, node)
}

// BuildIdentityCertificate returns the Certificate of one node's chassis
// identity. Its common name is the node's system-id: the Southbound's RBAC
// lets a client change only the Chassis, Chassis_Private and Encap rows
// named after the common name of its certificate, so this key can write
// only the node's own rows. The central's leaf issuer signs it, so the
// central trusts it as it trusts its own client. The Secret carries the
// chassis's ownership labels, which let the chassis claim it and delete it.
func BuildIdentityCertificate(c *ovnv1alpha1.OVNChassis, central *ovnv1alpha1.OVNCentral, e NodeEntry, owner map[string]string) *cmv1.Certificate {
	ref := central.LeafIssuer()
	secretLabels := childLabels(c, IdentityComponent)
	for k, v := range owner {
		secretLabels[k] = v
	}
	return &cmv1.Certificate{
		TypeMeta: metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: IdentityName(c, e.Name), Namespace: c.Namespace, Labels: childLabels(c, IdentityComponent),
			Annotations: map[string]string{nodeAnnotation: e.Name},
		},
		Spec: cmv1.CertificateSpec{
			SecretName: IdentityName(c, e.Name),
			CommonName: e.SystemID,
			Usages:     []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment, cmv1.UsageClientAuth},
			IssuerRef:  cmmeta.IssuerReference{Name: ref.Name, Kind: ref.Kind, Group: cmv1.SchemeGroupVersion.Group},
			// A renewal gets a new key, so a copied key dies with its
			// certificate.
			PrivateKey: &cmv1.CertificatePrivateKey{
				Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyAlways,
			},
			SecretTemplate: &cmv1.CertificateSecretTemplate{
				Labels:      secretLabels,
				Annotations: map[string]string{nodeAnnotation: e.Name},
			},
		},
	}
}

// BuildIdentityClaim is what the chassis writes on an issued identity
// Secret of the management cluster that has no controller: only its name,
// so that claiming it adds the chassis's controller reference and nothing
// else. Without the reference, deleting the chassis would leave the key
// behind, since cert-manager ties a Secret to its Certificate only when
// run with --enable-certificate-owner-ref.
func BuildIdentityClaim(c *ovnv1alpha1.OVNChassis, node string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: IdentityName(c, node), Namespace: c.Namespace},
	}
}

// BuildIdentityCopy returns the copy of an issued identity on the chassis's
// cluster: exactly the three keys, under the same name.
func BuildIdentityCopy(c *ovnv1alpha1.OVNChassis, node string, source *corev1.Secret) *corev1.Secret {
	data := map[string][]byte{}
	for _, k := range clientKeys {
		data[k] = source.Data[k]
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: IdentityName(c, node), Namespace: c.Namespace, Labels: childLabels(c, IdentityComponent),
			Annotations: map[string]string{nodeAnnotation: node},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// IdentityHash is the first 8 hex digits of the SHA-256 of an identity's
// certificate: what a node installed, compared with what is issued.
func IdentityHash(s *corev1.Secret) string {
	sum := sha256.Sum256(s.Data[corev1.TLSCertKey])
	return hex.EncodeToString(sum[:])[:8]
}

// StaleIdentity tells whether an identity object, by the node its
// annotation names, belongs to no node the chassis still renders. An
// object without the annotation is not an identity this chassis made.
func StaleIdentity(annotations map[string]string, entries []NodeEntry) bool {
	node, ok := annotations[nodeAnnotation]
	if !ok {
		return false
	}
	for _, e := range entries {
		if e.Name == node {
			return false
		}
	}
	return true
}
