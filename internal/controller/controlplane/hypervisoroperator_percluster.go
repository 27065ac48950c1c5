package controlplane

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// With credentials: PerCluster, each compute cluster's copy of the
// hypervisor operator's auth Secret names a Keystone user of its own. A
// copy stolen from one cluster then names that cluster, and revoking it
// (the reissue annotation, or withdrawing the copy) leaves the others
// working. The shared user stays for the auth Secret beside the Nova.

// HypervisorOperatorUserName is a compute cluster's own hypervisor operator
// user.
func HypervisorOperatorUserName(cluster string) string {
	return c5c3v1alpha1.HypervisorOperatorUserPrefix + cluster
}

// HypervisorOperatorClusterCredentialsName is the Secret with the password
// of a compute cluster's own hypervisor operator user.
func HypervisorOperatorClusterCredentialsName(cp *c5c3v1alpha1.ControlPlane, cluster string) string {
	return cp.Name + c5c3v1alpha1.HypervisorOperatorCredentialsInfix + cluster
}

// AuthForUser returns a copy of the auth Secret's data that logs in as user
// with password; the other keys stay as they are. It is pure.
func AuthForUser(auth map[string][]byte, user, password string) map[string][]byte {
	out := maps.Clone(auth)
	out[authUsernameKey] = []byte(user)
	out[authPasswordKey] = []byte(password)
	return out
}

// KeepClusterHypervisorOperators decides which compute clusters keep their
// own hypervisor operator user. While PerCluster and the account are
// wanted and the account was delivered in this pass, those are the target
// clusters that do not withhold the copy; when either is not wanted, none.
// decided is false while the account is wanted but was not delivered in
// this pass (its Nova rolls out, say): every user then stays as it is. It
// is pure, so the rule is table-tested.
func KeepClusterHypervisorOperators(wanted, delivered bool, targets, withheld []string) (keep []string, decided bool) {
	switch {
	case !wanted:
		return nil, true
	case !delivered:
		return nil, false
	}
	for _, c := range targets {
		if !slices.Contains(withheld, c) {
			keep = append(keep, c)
		}
	}
	return keep, true
}

// perClusterAuth gives every delivery that carries the auth Secret its
// cluster's own user, issuing it when needed. A cluster whose user cannot
// be made ready is reported and gets nothing in this pass; the deliveries
// that remain are returned.
func (r *Reconciler) perClusterAuth(ctx context.Context, p *pass, ready []delivery) []delivery {
	out := ready[:0]
	for _, d := range ready {
		if d.auth {
			data, err := r.clusterAuth(ctx, p, d.cluster)
			if err != nil {
				p.failures = append(p.failures, clusterResult{d.cluster, c5c3v1alpha1.HypervisorOperatorErrorReason,
					fmt.Sprintf("on %s: the cluster's own hypervisor operator user: %s", d.cluster, err.Error())})
				continue
			}
			d.authData = data
		}
		out = append(out, d)
	}
	return out
}

// clusterAuth returns the auth data of one cluster's copy: its own user,
// created or brought up to date in Keystone, with the role of the shared
// account on the shared project, both of which provisionHypervisorOperator
// made ready in this pass. Keystone is told the password only when
// the copy on the cluster does not already carry it.
func (r *Reconciler) clusterAuth(ctx context.Context, p *pass, cluster string) (map[string][]byte, error) {
	cp := p.cp
	password, err := r.issuedPassword(ctx, cp, cluster, HypervisorOperatorClusterCredentialsName(cp, cluster),
		c5c3v1alpha1.HypervisorOperatorClusterLabel)
	if err != nil {
		return nil, err
	}
	ks, err := r.accounts(ctx, p)
	if err != nil {
		return nil, err
	}
	user := HypervisorOperatorUserName(cluster)
	delivered := r.copiedPassword(ctx, cp, cluster) == password
	userID, err := ensureUser(ctx, ks, user, p.hvoDomainID, password, !delivered, AccountDescription(cp))
	if err != nil {
		return nil, err
	}
	if err := grantRole(ctx, ks, c5c3v1alpha1.HypervisorOperatorRole, userID, p.hvoProjectID); err != nil {
		return nil, err
	}
	return AuthForUser(p.hvoAuth, user, password), nil
}

// copiedPassword is the password the cluster's copy of the auth Secret
// carries, or "".
func (r *Reconciler) copiedPassword(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string) string {
	children, err := r.Registry.WriterFor(cluster, nil)
	if err != nil {
		return ""
	}
	s := &corev1.Secret{}
	if err := children.Reader.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: HypervisorOperatorAuthName(cp)}, s); err != nil {
		return ""
	}
	return string(s.Data[authPasswordKey])
}

// pruneClusterHypervisorOperators deletes the users, and their Secrets, of
// clusters that no longer keep one (KeepClusterHypervisorOperators).
func (r *Reconciler) pruneClusterHypervisorOperators(ctx context.Context, p *pass) error {
	list := &corev1.SecretList{}
	if err := r.Client.List(ctx, list, client.InNamespace(p.cp.Namespace), client.HasLabels{c5c3v1alpha1.HypervisorOperatorClusterLabel}); err != nil {
		return err
	}
	wanted := p.nova != nil && wantsHypervisorOperator(p.cp) && PerCluster(p.cp)
	keep, decided := KeepClusterHypervisorOperators(wanted, p.hvoAuth != nil, p.targets, p.authWithheld)
	if !decided {
		return nil
	}
	for i := range list.Items {
		s := &list.Items[i]
		cluster := s.Labels[c5c3v1alpha1.HypervisorOperatorClusterLabel]
		if slices.Contains(keep, cluster) || !childwriter.Controls(p.cp, s, r.Scheme) {
			continue
		}
		if err := r.deleteClusterHypervisorOperator(ctx, p, cluster); err != nil {
			return clusterHypervisorOperatorError(cluster, err)
		}
		if _, err := childwriter.Local(r.Client, r.Scheme).Delete(ctx, p.cp, s); err != nil {
			return err
		}
		p.cp.Status.GeneratedSecrets = ForgetGenerated(p.cp.Status.GeneratedSecrets, s.Name)
	}
	return nil
}

// deleteClusterHypervisorOperator deletes a cluster's own hypervisor
// operator user if it carries this ControlPlane's mark.
func (r *Reconciler) deleteClusterHypervisorOperator(ctx context.Context, p *pass, cluster string) error {
	return r.deleteAccountUser(ctx, p, p.adminDomain, HypervisorOperatorUserName(cluster))
}

// clusterHypervisorOperatorError files a failed deletion of a cluster's
// own hypervisor operator user.
func clusterHypervisorOperatorError(cluster string, err error) error {
	return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.HypervisorOperatorErrorReason,
		fmt.Errorf("deleting the hypervisor operator user of compute cluster %s: %w", cluster, err))
}
