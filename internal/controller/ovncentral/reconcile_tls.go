package ovncentral

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// reconcileTLS asks cert-manager for every certificate and waits until each
// Secret carries a certificate, its key and the CA. Nothing that mounts a
// Secret is written before, so no pod starts without its identity. The
// client identity is published here, once it is complete.
func (r *Reconciler) reconcileTLS(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.central
	certs, err := r.applyTrustRoot(ctx, p)
	if err != nil {
		return flow.Continue, err
	}
	certs = append(certs, BuildCertificates(c)...)
	var waiting []string
	for _, cert := range certs {
		if err := p.children.Apply(ctx, c, cert); err != nil {
			return flow.Continue, certificateError(p, err)
		}
		// A Secret is tied to its Certificate as soon as it exists, even
		// while a reissue fails: it must not outlive the Certificate.
		msg, secret, stateErr := r.certificateState(ctx, p, cert)
		if err := tieSecret(ctx, p.children, cert, secret); err != nil {
			return flow.Continue, err
		}
		if stateErr != nil {
			return flow.Continue, stateErr
		}
		if msg != "" {
			waiting = append(waiting, msg)
		}
	}
	if c.Spec.Relay == nil {
		if err := r.retireCertificate(ctx, p, RelayName(c)); err != nil {
			return flow.Continue, fmt.Errorf("removing the relay's certificate: %w", err)
		}
	}
	if len(waiting) > 0 {
		return flow.Continue, flow.Wait(ovnv1alpha1.TLSReadyCondition, ovnv1alpha1.CertificatePendingReason,
			RequeueSecretPolling, "%s", strings.Join(waiting, "; "))
	}
	c.Status.ClientSecretName = ClientSecretName(c)
	conditionsOf(c).Set(ovnv1alpha1.TLSReadyCondition, metav1.ConditionTrue, ovnv1alpha1.CertificatesIssuedReason, issuedMessage(c))
	return flow.Continue, nil
}

// applyTrustRoot writes the central's own CA when the spec names no issuer
// and returns its Certificate, to be waited for with the others. A central
// that names an issuer deletes the CA it may have had: nothing it runs
// trusts that CA any more, and its Issuer could still sign.
func (r *Reconciler) applyTrustRoot(ctx context.Context, p *pass) ([]*cmv1.Certificate, error) {
	c := p.central
	selfSigned, ca, caIssuer := BuildOwnCA(c)
	if ca == nil {
		for _, obj := range ownCAObjects(c) {
			var err error
			if _, isCert := obj.(*cmv1.Certificate); isCert {
				err = r.retireCertificate(ctx, p, obj.GetName())
			} else {
				_, err = p.children.Delete(ctx, c, obj)
			}
			if err != nil && !apimeta.IsNoMatchError(err) {
				return nil, fmt.Errorf("removing the central's own CA: %w", err)
			}
		}
		return nil, nil
	}
	for _, issuer := range []*cmv1.Issuer{selfSigned, caIssuer} {
		if err := p.children.Apply(ctx, c, issuer); err != nil {
			return nil, certificateError(p, err)
		}
	}
	return []*cmv1.Certificate{ca}, nil
}

// issuedMessage names the issuer of the central's certificates.
func issuedMessage(c *ovnv1alpha1.OVNCentral) string {
	if ref := c.Spec.TLS.IssuerRef; ref != nil {
		return fmt.Sprintf("every certificate is issued by %s %s", ref.ResolvedKind(), ref.Name)
	}
	return fmt.Sprintf("every certificate is issued by the central's own CA, Issuer %s", OwnCAName(c))
}

// certificateState reads a Certificate's Secret and returns why it cannot
// be used yet, or "" when it can, and the Secret, nil while there is none
// or it could not be read. A failed issuance is reported as an error of
// its own, and retried at the polling interval, because cert-manager
// retries it too.
func (r *Reconciler) certificateState(ctx context.Context, p *pass, cert *cmv1.Certificate) (string, *corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := p.live.Get(ctx, client.ObjectKey{Namespace: cert.Namespace, Name: cert.Spec.SecretName}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", nil, fmt.Errorf("reading Secret %s: %w", cert.Spec.SecretName, err)
	}
	found := err == nil
	state, msg := DecideCertificate(cert, found, missingKey(secret))
	if !found {
		secret = nil
	}
	if state == CertificateFailed {
		return "", secret, flow.Wait(ovnv1alpha1.TLSReadyCondition, ovnv1alpha1.CertificateErrorReason, RequeueSecretPolling, "%s", msg)
	}
	return msg, secret, nil
}

// certificateError classifies a failure to write a Certificate: a cluster
// without cert-manager is waited for, a same-named Certificate Anvil does
// not own is invalid, anything else is retried.
func certificateError(p *pass, err error) error {
	var notOwned *childwriter.NotOwnedError
	var discovery *apiutil.ErrResourceDiscoveryFailed
	switch {
	case errors.As(err, &discovery):
		return flow.Wait(ovnv1alpha1.TLSReadyCondition, ovnv1alpha1.CapabilityProbeFailedReason, RequeueSecretPolling,
			"asking the cluster whether it serves cert-manager's Certificate kind failed")
	case apimeta.IsNoMatchError(err):
		where := "the management cluster"
		if p.children.Remote() {
			where = "target cluster " + p.children.Cluster
		}
		return flow.Wait(ovnv1alpha1.TLSReadyCondition, ovnv1alpha1.CertManagerUnavailableReason, RequeueSecretPolling,
			"cert-manager's Certificate kind is not served on %s; install cert-manager there", where)
	case errors.As(err, &notOwned):
		return flow.Invalid(ovnv1alpha1.TLSReadyCondition, ovnv1alpha1.CertificateErrorReason, err)
	}
	return fmt.Errorf("certificates: %w", err)
}

// isNoMatch reports whether err says a kind is not served.
func isNoMatch(err error) bool { return apimeta.IsNoMatchError(err) }
