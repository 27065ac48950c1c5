package controlplane

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// pruneHypervisorOperator removes everything the account left, in the
// order that never strands a credential: the copies on compute clusters
// that the inventory lists, the user and the project in Keystone, and the
// Secrets beside the Nova.
// The Secrets go last, so while either exists there may be more to prune;
// without them there is nothing, and a ControlPlane that never asked for
// the account costs one cached read here.
func (r *Reconciler) pruneHypervisorOperator(ctx context.Context, p *pass) error {
	cp := p.cp
	if !r.hasHypervisorOperatorSecrets(ctx, cp) {
		return nil
	}
	if err := r.withdraw(ctx, p, authCopies(cp)); err != nil {
		return hypervisorOperatorError(err)
	}
	if left := authCopies(cp); len(left) > 0 {
		return flow.Wait(c5c3v1alpha1.NovaReadyCondition, anvilmeta.TargetClusterUnavailableReason, waitRequeue,
			"removing the hypervisor operator's account: waiting to delete its copies on %s", strings.Join(clustersOf(left), ", "))
	}
	if err := r.deleteAccount(ctx, p); err != nil {
		return hypervisorOperatorError(err)
	}
	local := childwriter.Local(r.Client, r.Scheme)
	for _, name := range []string{HypervisorOperatorAuthName(cp), HypervisorOperatorCredentialsName(cp)} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cp.Namespace, Name: name}}
		if _, err := local.Delete(ctx, cp, s); err != nil {
			return hypervisorOperatorError(fmt.Errorf("deleting Secret %s/%s: %w", cp.Namespace, name, err))
		}
		cp.Status.GeneratedSecrets = ForgetGenerated(cp.Status.GeneratedSecrets, name)
	}
	return nil
}

// hasHypervisorOperatorSecrets tells whether the cache holds either Secret
// of the account beside the ControlPlane; a read error counts as present,
// so pruning is retried.
func (r *Reconciler) hasHypervisorOperatorSecrets(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) bool {
	for _, name := range []string{HypervisorOperatorCredentialsName(cp), HypervisorOperatorAuthName(cp)} {
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return true
		}
	}
	return false
}

// releaseFinalizer drops the accounts finalizer once nothing it guards is
// left: no account asked for, and no Secret of an account left behind.
func (r *Reconciler) releaseFinalizer(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp := p.cp
	if !controllerutil.ContainsFinalizer(cp, c5c3v1alpha1.AccountsFinalizer) || wantsHypervisorOperator(cp) {
		return flow.Continue, nil
	}
	// A cluster whose credentials Secret is gone may still have its user,
	// until the next pass that reaches the cluster issues a new Secret.
	if wantsAccounts(cp) && PerCluster(cp) && len(p.targets) > 0 {
		return flow.Continue, nil
	}
	if r.hasHypervisorOperatorSecrets(ctx, cp) || len(cp.Status.BrokerUsers) > 0 {
		return flow.Continue, nil
	}
	// Every per-cluster password Secret left stands for a user to delete.
	for _, label := range []string{c5c3v1alpha1.ComputeClusterLabel, c5c3v1alpha1.HypervisorOperatorClusterLabel} {
		list := &corev1.SecretList{}
		if err := r.Client.List(ctx, list, client.InNamespace(cp.Namespace), client.HasLabels{label}); err != nil {
			return flow.Continue, err
		}
		for i := range list.Items {
			if childwriter.Controls(cp, &list.Items[i], r.Scheme) {
				return flow.Continue, nil
			}
		}
	}
	return flow.Continue, flow.RemoveFinalizer(ctx, r.Client, cp, c5c3v1alpha1.AccountsFinalizer)
}

// deleteAccount deletes the user and the project, each only when it
// carries this ControlPlane's mark: a same-named foreign account is never
// touched.
func (r *Reconciler) deleteAccount(ctx context.Context, p *pass) error {
	keystone, err := r.accounts(ctx, p)
	if err != nil {
		return err
	}
	domainID, err := keystone.DomainID(ctx, p.adminDomain)
	if err != nil || domainID == "" {
		return err
	}
	mark := AccountDescription(p.cp)
	if err := deleteMarkedUser(ctx, keystone, c5c3v1alpha1.HypervisorOperatorUser, domainID, mark); err != nil {
		return err
	}
	project, found, err := keystone.LookupProject(ctx, c5c3v1alpha1.HypervisorOperatorProject, domainID)
	if err != nil {
		return err
	}
	if found && project.Description == mark {
		return keystone.DeleteProject(ctx, project.ID)
	}
	return nil
}

// authCopies are the inventory's entries of the auth Secret's copies.
func authCopies(cp *c5c3v1alpha1.ControlPlane) []c5c3v1alpha1.DeliveredCopy {
	var out []c5c3v1alpha1.DeliveredCopy
	for _, d := range cp.Status.Deliveries {
		if d.Name == HypervisorOperatorAuthName(cp) {
			out = append(out, d)
		}
	}
	return out
}

// clustersOf names the clusters of inventory entries, in their order.
func clustersOf(list []c5c3v1alpha1.DeliveredCopy) []string {
	out := make([]string, 0, len(list))
	for _, d := range list {
		out = append(out, d.Cluster)
	}
	return out
}
