package ovnchassis

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// reconcileCentral reads the central from the management cluster, in the
// chassis's namespace, and decides the addresses the chassis dial. A
// central on another cluster that does not publish its databases there is
// terminal until the central changes; its watch brings the fix.
func (r *Reconciler) reconcileCentral(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.chassis
	central := &ovnv1alpha1.OVNCentral{}
	key := client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.CentralRef.Name}
	if err := r.Client.Get(ctx, key, central); err != nil {
		if apierrors.IsNotFound(err) {
			return flow.Continue, flow.Wait(ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.CentralNotFoundReason, centralPoll,
				"OVNCentral %s does not exist in namespace %s", key.Name, key.Namespace)
		}
		return flow.Continue, flow.Fail(ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.CentralReadErrorReason,
			fmt.Errorf("reading OVNCentral %s: %w", key.Name, err))
	}
	v := DecideCentral(c, central)
	switch {
	case v.Reason == ovnv1alpha1.CentralResolvedReason:
	case v.Requeue > 0:
		return flow.Continue, flow.Wait(ovnv1alpha1.CentralReadyCondition, v.Reason, v.Requeue, "%s", v.Message)
	default:
		return flow.Continue, flow.Invalid(ovnv1alpha1.CentralReadyCondition, v.Reason, errors.New(v.Message))
	}
	p.central, p.addrs, p.resolved = central, v.Addresses, v.Message
	return flow.Continue, nil
}

// reconcileClientSecret publishes what the chassis's cluster has of the
// central's client identity. On the central's cluster that is the
// central's own Secret. Elsewhere it is {chassis}-ovn-client with the
// central's CA alone, kept equal to the source's through the Secret watch
// and swept with the chassis; the key never leaves the management
// cluster.
func (r *Reconciler) reconcileClientSecret(ctx context.Context, p *pass) (flow.Outcome, error) {
	c, central := p.chassis, p.central
	if !p.addrs.CrossCluster {
		c.Status.ClientSecretName = central.Status.ClientSecretName
		return r.resolved(p)
	}
	// A resolved central runs on the management cluster (DecideCentral).
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: central.Namespace, Name: central.Status.ClientSecretName}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return flow.Continue, flow.Wait(ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.ClientSecretPendingReason, centralPoll,
				"the central's client Secret %s does not exist yet", key.Name)
		}
		return flow.Continue, flow.Fail(ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.ClientSecretReadErrorReason,
			fmt.Errorf("reading the central's client Secret %s: %w", key.Name, err))
	}
	if k := MissingClientKey(secret); k != "" {
		return flow.Continue, flow.Wait(ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.ClientSecretIncompleteReason, centralPoll,
			"the central's client Secret %s carries no %s yet", key.Name, k)
	}
	if err := p.children.Apply(ctx, c, BuildClientSecret(c, secret)); err != nil {
		var notOwned *childwriter.NotOwnedError
		if errors.As(err, &notOwned) {
			return flow.Continue, flow.Invalid(ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.ClientSecretCopyFailedReason,
				fmt.Errorf("refusing to overwrite Secret %s/%s: it exists and is not owned by this OVNChassis", c.Namespace, ClientSecretName(c)))
		}
		return flow.Continue, fmt.Errorf("copying the client identity: %w", err)
	}
	c.Status.ClientSecretName = ClientSecretName(c)
	return r.resolved(p)
}

// resolved reports the central resolved.
func (r *Reconciler) resolved(p *pass) (flow.Outcome, error) {
	conditionsOf(p.chassis).Set(ovnv1alpha1.CentralReadyCondition, metav1.ConditionTrue, ovnv1alpha1.CentralResolvedReason, p.resolved)
	return flow.Continue, nil
}
