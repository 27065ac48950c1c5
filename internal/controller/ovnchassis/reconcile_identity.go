package ovnchassis

import (
	"context"
	"errors"
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete

// reconcileIdentities gives every node it renders an identity of its own: a
// certificate whose common name is the node's system-id, issued by the
// central's issuer on the management cluster and copied to the chassis's
// cluster when it lives elsewhere (docs/design/ovn.md, "Each chassis
// writes only its own rows"). A leaving node keeps its identity, which
// deletes its chassis from the Southbound; the identities of nodes that
// are gone are removed. A node whose identity is not issued yet is waited
// for without holding the others or the DaemonSets.
func (r *Reconciler) reconcileIdentities(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.chassis
	owner, err := childwriter.OwnerLabels(c, r.Scheme)
	if err != nil {
		return flow.Continue, err
	}
	var pending []string
	for i := range p.entries {
		e := &p.entries[i]
		issued, err := r.issueIdentity(ctx, p, *e, owner)
		if err != nil {
			return flow.Continue, identityError(fmt.Errorf("node %s: %w", e.Name, err))
		}
		if issued == nil {
			pending = append(pending, e.Name)
			continue
		}
		e.IdentityHash = IdentityHash(issued)
	}
	if err := r.reapIdentities(ctx, p); err != nil {
		return flow.Continue, identityError(err)
	}
	if len(pending) > 0 {
		conditionsOf(c).Set(ovnv1alpha1.NodesReadyCondition, metav1.ConditionFalse, ovnv1alpha1.IdentityPendingReason,
			fmt.Sprintf("waiting for cert-manager to issue the identity of %d nodes (first: %s)", len(pending), pending[0]))
		return flow.Requeue(centralPoll), nil
	}
	return flow.Continue, nil
}

// issueIdentity writes one node's Certificate and returns its issued
// Secret, claimed and delivered, or nil while it is not issued.
func (r *Reconciler) issueIdentity(ctx context.Context, p *pass, e NodeEntry, owner map[string]string) (*corev1.Secret, error) {
	c, local := p.chassis, childwriter.Local(r.Client, r.Scheme)
	if err := local.Apply(ctx, c, BuildIdentityCertificate(c, p.central, e, owner)); err != nil {
		return nil, fmt.Errorf("writing its Certificate: %w", err)
	}
	issued := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: IdentityName(c, e.Name)}, issued)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading its Secret: %w", err)
	case MissingClientKey(issued) != "":
		return nil, nil
	}
	// cert-manager run with --enable-certificate-owner-ref already makes
	// the Certificate, which the chassis controls, the Secret's controller;
	// a Secret with a controller is left as it is.
	if metav1.GetControllerOf(issued) == nil {
		if err := local.Apply(ctx, c, BuildIdentityClaim(c, e.Name)); err != nil {
			return nil, fmt.Errorf("claiming its Secret: %w", err)
		}
	}
	if p.children.Remote() {
		if err := p.children.Apply(ctx, c, BuildIdentityCopy(c, e.Name, issued)); err != nil {
			return nil, fmt.Errorf("copying its Secret to target cluster %s: %w", p.children.Cluster, err)
		}
	}
	return issued, nil
}

// reapIdentities deletes the identities of nodes the chassis no longer
// renders: the Certificate and its Secret, and the copy on the chassis's
// cluster. Only objects this chassis controls go.
func (r *Reconciler) reapIdentities(ctx context.Context, p *pass) error {
	c, local := p.chassis, childwriter.Local(r.Client, r.Scheme)
	sel := client.MatchingLabels{instanceLabel: c.Name, componentLabel: IdentityComponent, nameLabel: nameValue}
	certs := &cmv1.CertificateList{}
	// Without cert-manager's kind there is no Certificate to reap; a node
	// that needs one reports the missing kind when its identity is written.
	if err := r.Client.List(ctx, certs, client.InNamespace(c.Namespace), sel); err != nil && !meta.IsNoMatchError(err) {
		return fmt.Errorf("listing identity Certificates: %w", err)
	}
	for i := range certs.Items {
		cert := &certs.Items[i]
		if !StaleIdentity(cert.Annotations, p.entries) {
			continue
		}
		if _, err := local.Delete(ctx, c, cert); err != nil {
			return fmt.Errorf("deleting identity Certificate %s: %w", cert.Name, err)
		}
		issued := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: cert.Name}}
		if _, err := local.Delete(ctx, c, issued); err != nil {
			return fmt.Errorf("deleting identity Secret %s: %w", cert.Name, err)
		}
	}
	if !p.children.Remote() {
		return nil
	}
	copies := &corev1.SecretList{}
	if err := p.live.List(ctx, copies, client.InNamespace(c.Namespace), sel); err != nil {
		return fmt.Errorf("listing identity copies: %w", err)
	}
	for i := range copies.Items {
		if s := &copies.Items[i]; StaleIdentity(s.Annotations, p.entries) {
			if _, err := p.children.Delete(ctx, c, s); err != nil {
				return fmt.Errorf("deleting identity copy %s: %w", s.Name, err)
			}
		}
	}
	return nil
}

// identityError reports a failed identity step: an object Anvil does not
// own in the way is invalid input, anything else is retried.
func identityError(err error) error {
	var notOwned *childwriter.NotOwnedError
	if errors.As(err, &notOwned) {
		return flow.Invalid(ovnv1alpha1.NodesReadyCondition, ovnv1alpha1.IdentityErrorReason, err)
	}
	return flow.Fail(ovnv1alpha1.NodesReadyCondition, ovnv1alpha1.IdentityErrorReason, err)
}
