package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// foreignRequeue is how often a ControlPlane looks again at a Keystone
// account of its name that it does not own: Keystone sends no events.
const foreignRequeue = time.Minute

// readBackRequeue is the short wait after a generated Secret could not be
// read back, which only a stale cache causes.
const readBackRequeue = time.Second

// wantsAccounts tells whether the ControlPlane may hold Keystone accounts
// at all: it runs a Nova and is not being deleted.
func wantsAccounts(cp *c5c3v1alpha1.ControlPlane) bool {
	return cp.DeletionTimestamp.IsZero() && cp.Spec.Services.Nova != nil
}

// wantsHypervisorOperator tells whether the spec asks for the account.
func wantsHypervisorOperator(cp *c5c3v1alpha1.ControlPlane) bool {
	return wantsAccounts(cp) && cp.Spec.Services.Nova.HypervisorOperator != nil
}

// reconcileHypervisorOperator provisions the hypervisor operator's account
// once the Nova is Ready, and prunes it when the spec no longer asks for
// it. The copies on compute clusters are written by the delivery step.
func (r *Reconciler) reconcileHypervisorOperator(ctx context.Context, p *pass) (flow.Outcome, error) {
	if !wantsHypervisorOperator(p.cp) {
		return flow.Continue, r.pruneHypervisorOperator(ctx, p)
	}
	// A rolling Nova's contract goes out, but its account, like the
	// catalog, waits until the Nova is Ready; the copies stay as they are.
	if p.nova == nil || p.novaRolling {
		return flow.Continue, nil
	}
	data, err := r.provisionHypervisorOperator(ctx, p)
	if err != nil {
		return flow.Continue, hypervisorOperatorError(err)
	}
	p.hvoAuth = data
	return flow.Continue, nil
}

// provisionHypervisorOperator makes the account true in Keystone and
// writes the auth Secret beside the Nova; it returns the Secret's data.
func (r *Reconciler) provisionHypervisorOperator(ctx context.Context, p *pass) (map[string][]byte, error) {
	cp := p.cp
	if _, _, err := r.adminCredentials(ctx, cp); err != nil {
		return nil, err
	}
	// The finalizer comes first: from the first Keystone write on, a
	// deleted ControlPlane must clean up what it created.
	if err := flow.AddFinalizer(ctx, r.Client, cp, c5c3v1alpha1.AccountsFinalizer); err != nil {
		return nil, err
	}
	password, err := r.hypervisorOperatorPassword(ctx, cp)
	if err != nil {
		return nil, err
	}
	keystone, err := r.accounts(ctx, p)
	if err != nil {
		return nil, err
	}
	domainID, err := keystone.DomainID(ctx, p.adminDomain)
	if err != nil {
		return nil, err
	}
	if domainID == "" {
		return nil, fmt.Errorf("the admin domain %q does not exist in Keystone", p.adminDomain)
	}
	// Keystone is told the password only when the auth Secret does not
	// already carry it: a settled account costs reads, never a write.
	delivered := r.deliveredPassword(ctx, cp)
	projectID, err := ensureAccount(ctx, keystone, domainID, password, delivered != password, AccountDescription(cp))
	if err != nil {
		return nil, err
	}
	p.hvoDomainID, p.hvoProjectID = domainID, projectID
	data := BuildHypervisorOperatorAuth(cp, p.adminDomain, password)
	auth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: HypervisorOperatorAuthName(cp), Namespace: cp.Namespace}, Type: corev1.SecretTypeOpaque, Data: data}
	if err := childwriter.Local(r.Client, r.Scheme).Apply(ctx, cp, auth); err != nil {
		return nil, err
	}
	return data, nil
}

// adminCredentials reads services.keystone.adminCredentialsSecretRef; a
// missing Secret or password is a wait.
func (r *Reconciler) adminCredentials(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) (openstack.Credentials, string, error) {
	ks := cp.Spec.Services.Keystone
	if ks == nil || ks.AdminCredentialsSecretRef == nil {
		return openstack.Credentials{}, "", flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.HypervisorOperatorErrorReason,
			errors.New("services.keystone.adminCredentialsSecretRef is required to manage Keystone accounts "+
				"(services.nova.hypervisorOperator, services.nova.remoteCompute.credentials: PerCluster)"))
	}
	name := ks.AdminCredentialsSecretRef.Name
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: name}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return openstack.Credentials{}, "", err
	}
	creds, domain, credsErr := AdminCredentials(ks, s.Data)
	if apierrors.IsNotFound(err) || credsErr != nil {
		return openstack.Credentials{}, "", flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForAdminCredentialsReason, waitRequeue,
			"services.keystone.adminCredentialsSecretRef names Secret %s/%s, which does not exist or has no key password", cp.Namespace, name)
	}
	return creds, domain, nil
}

// hypervisorOperatorPassword returns the account's password, generating
// the credentials Secret when it does not exist. Deleting that Secret is
// how a password is rotated.
func (r *Reconciler) hypervisorOperatorPassword(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) (string, error) {
	password, err := randomSecret()
	if err != nil {
		return "", err
	}
	name := HypervisorOperatorCredentialsName(cp)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cp.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{passwordKey: []byte(password)},
	}
	password, err = r.ensureGenerated(ctx, cp, s, passwordKey, false)
	if err != nil {
		return "", err
	}
	// No value means the create met a Secret the cache had not seen yet:
	// its value is unknown until the cache catches up.
	if password == "" {
		return "", flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForHypervisorOperatorCredentialsReason, readBackRequeue,
			"the credentials Secret %s/%s of the hypervisor operator account has not been materialized yet", cp.Namespace, name)
	}
	return password, nil
}

// deliveredPassword is the password the auth Secret carries, or "".
func (r *Reconciler) deliveredPassword(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) string {
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: HypervisorOperatorAuthName(cp)}, s); err != nil {
		return ""
	}
	return string(s.Data[authPasswordKey])
}

// ForeignAccountError reports a Keystone user or project of the account's
// name that this ControlPlane did not create.
type ForeignAccountError struct {
	Kind, Name string
}

func (e *ForeignAccountError) Error() string {
	return fmt.Sprintf("the Keystone %s %s exists and was not created by this ControlPlane; it is left untouched", e.Kind, e.Name)
}

// ensureAccount creates the project and the user, sets the password when
// asked to, and grants the role. Every call is a read unless something is
// missing.
func ensureAccount(ctx context.Context, ks openstack.Accounts, domainID, password string, setPassword bool, mark string) (string, error) {
	projectID, err := ensureProject(ctx, ks, c5c3v1alpha1.HypervisorOperatorProject, domainID, mark)
	if err != nil {
		return "", err
	}
	userID, err := ensureUser(ctx, ks, c5c3v1alpha1.HypervisorOperatorUser, domainID, password, setPassword, mark)
	if err != nil {
		return "", err
	}
	return projectID, grantRole(ctx, ks, c5c3v1alpha1.HypervisorOperatorRole, userID, projectID)
}

// ensureUser returns the ID of the marked user, creating it with password
// if needed, or setting password when asked to. A same-named user without
// the mark is refused.
func ensureUser(ctx context.Context, ks openstack.Accounts, name, domainID, password string, setPassword bool, mark string) (string, error) {
	user, found, err := ks.LookupUser(ctx, name, domainID)
	switch {
	case err != nil:
		return "", err
	case !found:
		return ks.CreateUser(ctx, name, domainID, password, mark)
	case user.Description != mark:
		return "", &ForeignAccountError{Kind: "user", Name: name}
	case setPassword:
		if err := ks.SetPassword(ctx, user.ID, password); err != nil {
			return "", err
		}
	}
	return user.ID, nil
}

// deleteMarkedUser deletes the user of that name only if it carries mark.
func deleteMarkedUser(ctx context.Context, ks openstack.Accounts, name, domainID, mark string) error {
	user, found, err := ks.LookupUser(ctx, name, domainID)
	if err != nil || !found || user.Description != mark {
		return err
	}
	return ks.DeleteUser(ctx, user.ID)
}

// ensureProject returns the ID of the marked project, creating it if
// needed.
func ensureProject(ctx context.Context, ks openstack.Accounts, name, domainID, mark string) (string, error) {
	project, found, err := ks.LookupProject(ctx, name, domainID)
	switch {
	case err != nil:
		return "", err
	case !found:
		return ks.CreateProject(ctx, name, domainID, mark)
	case project.Description != mark:
		return "", &ForeignAccountError{Kind: "project", Name: name}
	}
	return project.ID, nil
}

// grantRole assigns a role on a project unless the user holds it.
func grantRole(ctx context.Context, ks openstack.Accounts, role, userID, projectID string) error {
	roleID, err := ks.FindRole(ctx, role)
	if err != nil {
		return err
	}
	if roleID == "" {
		return fmt.Errorf("the Keystone role %s does not exist", role)
	}
	held, err := ks.RolesOn(ctx, userID, projectID)
	if err != nil || slices.Contains(held, roleID) {
		return err
	}
	return ks.AssignRole(ctx, roleID, userID, projectID)
}

// hypervisorOperatorError files a failure of the account under
// HypervisorOperatorError: a foreign account or Secret is looked at again
// after a while, anything else is retried with backoff.
func hypervisorOperatorError(err error) error {
	var step *flow.StepError
	var foreign *ForeignAccountError
	var notOwned *childwriter.NotOwnedError
	switch {
	case errors.As(err, &step):
		return err
	case errors.As(err, &foreign), errors.As(err, &notOwned):
		return flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.HypervisorOperatorErrorReason, foreignRequeue, "%s", err.Error())
	}
	return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.HypervisorOperatorErrorReason, fmt.Errorf("hypervisor operator account: %w", err))
}
