package ovncentral

import (
	"context"
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
)

// A certificate Secret outlives its Certificate: cert-manager leaves the
// Secret behind unless it runs with --enable-certificate-owner-ref, which
// is not its default. A central would then leave every key it ever had,
// its own CA's among them, for anyone who creates a central of the same
// name to pick up. So once cert-manager has issued a Secret, the central
// gives it an ownerReference to its Certificate, and the garbage collector
// of the Secret's cluster deletes it once the Certificate is gone.
//
// The reference points at the Certificate rather than at the central, for
// two reasons. It lives on the Certificate's cluster, so it resolves for a
// central placed on a compute cluster too. And the Secret can go only
// after its Certificate: were it deleted first, cert-manager, still seeing
// the Certificate, would issue a fresh Secret that nothing claims, and
// that Secret would stay behind when the Certificate went.
//
// The reference is not a controller reference, and it is written under
// Anvil's field manager: cert-manager checks only the ownerReferences its
// own field manager wrote, so it does not reissue a certificate over
// Anvil's reference, and a Secret that cert-manager already gave a
// controller (under that flag) is left alone.

// SecretNeedsOwner tells whether secret, as read from the cluster, is the
// Secret cert-manager issued for cert, the live Certificate, and still
// lacks a reference to it. cert-manager names the Certificate of a Secret
// it issued in the certificate-name annotation; a Secret without it is not
// known to be the Certificate's, and is not touched. It is pure.
func SecretNeedsOwner(cert *cmv1.Certificate, secret *corev1.Secret) bool {
	switch {
	case cert == nil || secret == nil || cert.UID == "":
		return false
	case secret.Namespace != cert.Namespace || secret.Name != cert.Spec.SecretName:
		return false
	case secret.Annotations[cmv1.CertificateNameKey] != cert.Name:
		return false
	case metav1.GetControllerOf(secret) != nil:
		return false
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID == cert.UID {
			return false
		}
	}
	return true
}

// tieSecret gives secret an ownerReference to cert when SecretNeedsOwner
// says it lacks one; a tied Secret costs no write. The apply sends only the reference; cert-manager's fields stay
// cert-manager's, and the apply does not force: a conflict is an error,
// never a takeover.
func tieSecret(ctx context.Context, w *childwriter.Writer, cert *cmv1.Certificate, secret *corev1.Secret) error {
	if !SecretNeedsOwner(cert, secret) || !w.Allows(secret.Namespace) {
		return nil
	}
	ref := metav1ac.OwnerReference().
		WithAPIVersion(cmv1.SchemeGroupVersion.String()).
		WithKind(cmv1.CertificateKind).
		WithName(cert.Name).
		WithUID(cert.UID)
	tie := corev1ac.Secret(secret.Name, secret.Namespace).WithOwnerReferences(ref)
	if err := w.Client.Apply(ctx, tie, client.FieldOwner(childwriter.FieldOwner)); err != nil {
		return fmt.Errorf("tying Secret %s to its Certificate: %w", secret.Name, err)
	}
	return nil
}

// retireCertificate deletes a Certificate the central no longer needs (the
// relay's, or its own CA's) together with its Secret: the Secret is tied
// to the Certificate first, in case no pass tied it while it was in use,
// and the garbage collector follows the deletion. A Certificate the
// central does not control, or none, is left alone.
func (r *Reconciler) retireCertificate(ctx context.Context, p *pass, name string) error {
	cert := &cmv1.Certificate{}
	err := p.live.Get(ctx, client.ObjectKey{Namespace: p.central.Namespace, Name: name}, cert)
	switch {
	case apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Certificate %s: %w", name, err)
	case !childwriter.Controls(p.central, cert, r.Scheme):
		return nil
	}
	secret := &corev1.Secret{}
	err = p.live.Get(ctx, client.ObjectKey{Namespace: cert.Namespace, Name: cert.Spec.SecretName}, secret)
	switch {
	case err == nil:
		if err := tieSecret(ctx, p.children, cert, secret); err != nil {
			return err
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Secret %s: %w", cert.Spec.SecretName, err)
	}
	if _, err := p.children.Delete(ctx, p.central, cert); err != nil {
		return fmt.Errorf("removing Certificate %s: %w", name, err)
	}
	return nil
}
