package controlplane

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// The nova service user the projected Nova runs as (BuildNovaSpec): a
// cluster's own user lives in its domain, on its project.
const (
	novaServiceUser    = "nova"
	novaServiceProject = "service"
	novaServiceDomain  = "Default"
)

// computeRoleNames are the roles a cluster's own nova-compute user may
// hold, and only those of them the nova service user holds too, so that it
// never has more than nova and not the roles nova needs for its API side:
//   - admin, because nova-compute's calls as itself need it on the
//     releases Anvil runs: Placement's resource provider, inventory and
//     trait writes, and Neutron's port binding (binding:host_id and
//     binding:profile), are admin-only under their default policies;
//   - service, because nova-compute sends a service token with its calls
//     to Neutron and Cinder, and a service that requires a service token's
//     role (service_token_roles_required) accepts only this one.
var computeRoleNames = []string{"admin", "service"}

// ComputeRoles decides the roles of a cluster's own nova-compute user: of
// the compute roles (computeIDs), those nova holds (novaIDs). grant are
// those the user lacks; revoke are the roles it holds beyond them, which an
// earlier version copied from nova or somebody granted by hand: the user is
// this ControlPlane's, so its roles on the project are too. It is pure.
func ComputeRoles(novaIDs, computeIDs, held []string) (grant, revoke []string) {
	var want []string
	for _, id := range computeIDs {
		if slices.Contains(novaIDs, id) && !slices.Contains(want, id) {
			want = append(want, id)
		}
	}
	for _, id := range want {
		if !slices.Contains(held, id) {
			grant = append(grant, id)
		}
	}
	for _, id := range held {
		if !slices.Contains(want, id) {
			revoke = append(revoke, id)
		}
	}
	return grant, revoke
}

// computeAccess is where the clusters' own nova-compute users live and the
// IDs of the roles they may hold, read once per pass.
type computeAccess struct {
	domainID, projectID string
	novaRoles, roles    []string
}

// accounts returns the pass's admin session, logging in on first use: one
// token per pass, whatever the number of accounts and clusters. It also
// notes the admin domain in the pass.
func (r *Reconciler) accounts(ctx context.Context, p *pass) (openstack.Accounts, error) {
	if p.keystone != nil {
		return p.keystone, nil
	}
	admin, domain, err := r.adminCredentials(ctx, p.cp)
	if err != nil {
		return nil, err
	}
	if p.keystone, err = r.Keystone(ctx, admin); err != nil {
		return nil, err
	}
	p.adminDomain = domain
	return p.keystone, nil
}

// renderForCluster gives one cluster's mirror that cluster's own user and
// password, issuing them when needed, and its own broker user when the
// ControlPlane names the broker's admin Secret. live is the mirror the cluster holds,
// or nil: Keystone is told a password only when the mirror lacks it.
func (r *Reconciler) renderForCluster(ctx context.Context, p *pass, cluster string, mirror, live *corev1.Secret) error {
	password, err := r.clusterPassword(ctx, p.cp, cluster)
	if err != nil {
		return err
	}
	if err := flow.AddFinalizer(ctx, r.Client, p.cp, c5c3v1alpha1.AccountsFinalizer); err != nil {
		return err
	}
	ks, err := r.accounts(ctx, p)
	if err != nil {
		return err
	}
	if p.compute == nil {
		if p.compute, err = readComputeAccess(ctx, ks); err != nil {
			return err
		}
	}
	delivered := live != nil && string(live.Data[passwordKey]) == password
	if err := ensureClusterUser(ctx, ks, p.compute, ComputeUserName(cluster), password, !delivered, AccountDescription(p.cp)); err != nil {
		return err
	}
	data, err := RenderForCluster(mirror.Data, ComputeUserName(cluster), password)
	if err != nil {
		return err
	}
	if err := r.withBrokerUser(ctx, p, cluster, password, data, live); err != nil {
		return err
	}
	mirror.Data = data
	return nil
}

// clusterPassword returns a cluster's nova-compute password.
func (r *Reconciler) clusterPassword(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string) (string, error) {
	return r.issuedPassword(ctx, cp, cluster, ComputeCredentialsName(cp, cluster), c5c3v1alpha1.ComputeClusterLabel)
}

// issuedPassword returns the password in a cluster's credentials Secret
// name, generating the Secret, labelled label=cluster, when there is none,
// and a new password when the ControlPlane asks to reissue the cluster's
// credentials with a token the Secret was not issued for.
func (r *Reconciler) issuedPassword(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster, name, label string) (string, error) {
	password, err := randomSecret()
	if err != nil {
		return "", err
	}
	token := ReissueToken(cp, cluster)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cp.Namespace,
			Labels:      map[string]string{label: cluster},
			Annotations: map[string]string{c5c3v1alpha1.ReissueTokenAnnotation: token},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{passwordKey: []byte(password)},
	}
	existing := &corev1.Secret{}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(s), existing)
	reissue := err == nil && token != "" && existing.Annotations[c5c3v1alpha1.ReissueTokenAnnotation] != token
	// A reissue applies: the new password replaces the old one.
	password, err = r.ensureGenerated(ctx, cp, s, passwordKey, reissue)
	if err != nil {
		return "", err
	}
	if password == "" {
		// Only a stale cache causes this; the next pass reads it back.
		return "", flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.ComputeCredentialsErrorReason, readBackRequeue,
			"the credentials Secret %s/%s of compute cluster %s has not been materialized yet", cp.Namespace, s.Name, cluster)
	}
	return password, nil
}

// readComputeAccess reads the nova service user's domain, project and
// roles there, and the IDs of the compute roles that exist.
func readComputeAccess(ctx context.Context, ks openstack.Accounts) (*computeAccess, error) {
	domainID, err := ks.DomainID(ctx, novaServiceDomain)
	if err != nil {
		return nil, err
	}
	nova, found, err := ks.LookupUser(ctx, novaServiceUser, domainID)
	if err != nil {
		return nil, err
	}
	project, projectFound, err := ks.LookupProject(ctx, novaServiceProject, domainID)
	if err != nil {
		return nil, err
	}
	if !found || !projectFound {
		return nil, fmt.Errorf("the nova service user or the service project does not exist in the %s domain", novaServiceDomain)
	}
	access := &computeAccess{domainID: domainID, projectID: project.ID}
	if access.novaRoles, err = ks.RolesOn(ctx, nova.ID, project.ID); err != nil {
		return nil, err
	}
	for _, name := range computeRoleNames {
		id, err := ks.FindRole(ctx, name)
		if err != nil {
			return nil, err
		}
		if id != "" {
			access.roles = append(access.roles, id)
		}
	}
	return access, nil
}

// ensureClusterUser creates a cluster's user with the compute roles on the
// nova service user's project, or brings an existing one up to date.
func ensureClusterUser(ctx context.Context, ks openstack.Accounts, access *computeAccess, name, password string, setPassword bool, mark string) error {
	userID, err := ensureUser(ctx, ks, name, access.domainID, password, setPassword, mark)
	if err != nil {
		return err
	}
	held, err := ks.RolesOn(ctx, userID, access.projectID)
	if err != nil {
		return err
	}
	grant, revoke := ComputeRoles(access.novaRoles, access.roles, held)
	for _, role := range grant {
		if err := ks.AssignRole(ctx, role, userID, access.projectID); err != nil {
			return err
		}
	}
	for _, role := range revoke {
		if err := ks.RevokeRole(ctx, role, userID, access.projectID); err != nil {
			return err
		}
	}
	return nil
}

// pruneClusterCredentials deletes the users, and their Secrets, of
// clusters that no longer get their own: a cluster without the Nova's
// pools, or every cluster once PerCluster is off or the ControlPlane goes;
// and, the same way, the clusters' own hypervisor operator users.
func (r *Reconciler) pruneClusterCredentials(ctx context.Context, p *pass) (flow.Outcome, error) {
	list := &corev1.SecretList{}
	if err := r.Client.List(ctx, list, client.InNamespace(p.cp.Namespace), client.HasLabels{c5c3v1alpha1.ComputeClusterLabel}); err != nil {
		return flow.Continue, err
	}
	keep := map[string]bool{}
	if p.nova != nil && wantsAccounts(p.cp) && PerCluster(p.cp) {
		for _, c := range p.targets {
			keep[c] = true
		}
	}
	for i := range list.Items {
		s := &list.Items[i]
		cluster := s.Labels[c5c3v1alpha1.ComputeClusterLabel]
		if keep[cluster] || !childwriter.Controls(p.cp, s, r.Scheme) {
			continue
		}
		if err := r.deleteClusterUser(ctx, p, cluster); err != nil {
			return flow.Continue, clusterUserError(cluster, err)
		}
		if _, err := childwriter.Local(r.Client, r.Scheme).Delete(ctx, p.cp, s); err != nil {
			return flow.Continue, err
		}
		p.cp.Status.GeneratedSecrets = ForgetGenerated(p.cp.Status.GeneratedSecrets, s.Name)
	}
	if err := r.pruneBrokerUsers(ctx, p, keep); err != nil {
		return flow.Continue, err
	}
	if err := r.pruneClusterHypervisorOperators(ctx, p); err != nil {
		return flow.Continue, err
	}
	if !p.cp.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(p.cp, c5c3v1alpha1.AccountsFinalizer) {
		return flow.Continue, r.deleteTargetUsers(ctx, p)
	}
	return flow.Continue, nil
}

// deleteTargetUsers deletes the users of the clusters that still host the
// Nova's pools, when a ControlPlane goes: a user whose Secret was deleted
// while its cluster could not be reached has no Secret to be found by.
func (r *Reconciler) deleteTargetUsers(ctx context.Context, p *pass) error {
	targets, _, err := r.poolClusters(ctx, p.cp)
	if err != nil {
		return err
	}
	for _, cluster := range targets {
		if err := r.deleteClusterUser(ctx, p, cluster); err != nil {
			return clusterUserError(cluster, err)
		}
		if err := r.deleteClusterHypervisorOperator(ctx, p, cluster); err != nil {
			return clusterHypervisorOperatorError(cluster, err)
		}
	}
	return nil
}

// clusterUserError files a failed deletion of a cluster's user.
func clusterUserError(cluster string, err error) error {
	return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.ComputeCredentialsErrorReason,
		fmt.Errorf("deleting the Keystone user of compute cluster %s: %w", cluster, err))
}

// deleteClusterUser deletes a cluster's user if it carries the mark.
func (r *Reconciler) deleteClusterUser(ctx context.Context, p *pass, cluster string) error {
	return r.deleteAccountUser(ctx, p, novaServiceDomain, ComputeUserName(cluster))
}

// deleteAccountUser deletes the user of that name in the named domain if
// it carries this ControlPlane's mark. A domain that does not exist holds
// no such user.
func (r *Reconciler) deleteAccountUser(ctx context.Context, p *pass, domain, user string) error {
	ks, err := r.accounts(ctx, p)
	if err != nil {
		return err
	}
	domainID, err := ks.DomainID(ctx, domain)
	if err != nil || domainID == "" {
		return err
	}
	return deleteMarkedUser(ctx, ks, user, domainID, AccountDescription(p.cp))
}
