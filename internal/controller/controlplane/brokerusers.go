package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/brokeradmin"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
)

// brokerRights are a cluster's broker user's rights on the vhost of the
// transport URL: all of them, as the shared user has. nova-compute declares
// its own queues and exchanges, whose names oslo.messaging chooses, so a
// narrower pattern would break with its naming; what the user buys is that
// one cluster's access can be revoked alone and is named in the broker.
var brokerRights = brokeradmin.Permissions{Configure: ".*", Write: ".*", Read: ".*"}

// BrokerUserTag marks a broker user as this ControlPlane's. A tag grants
// nothing in RabbitMQ unless it is one of the management tags, so it can
// serve as the mark, as the description does in Keystone.
func BrokerUserTag(cp *c5c3v1alpha1.ControlPlane) string {
	return "anvil-controlplane:" + cp.Namespace + "/" + cp.Name
}

// brokerAdminName returns the broker admin Secret the ControlPlane names,
// or "" when its compute clusters share the transport URL's broker user.
func brokerAdminName(cp *c5c3v1alpha1.ControlPlane) string {
	if !PerCluster(cp) {
		return ""
	}
	if ref := cp.Spec.Services.Nova.RemoteCompute.BrokerAdminSecretRef; ref != nil {
		return ref.Name
	}
	return ""
}

// withBrokerUser gives a cluster's mirror data a transport URL that logs in
// as the cluster's own broker user, creating the user or setting its
// password when the mirror the cluster holds (live, or nil) lacks that URL.
func (r *Reconciler) withBrokerUser(ctx context.Context, p *pass, cluster, password string, data map[string][]byte, live *corev1.Secret) error {
	admin := brokerAdminName(p.cp)
	if admin == "" {
		return nil
	}
	user := ComputeUserName(cluster)
	raw := novaconfig.FromEnvLiteral(string(data[novaconfig.KeyTransportURL]))
	transportURL, vhost, err := novaconfig.TransportURLFor(raw, user, password)
	if err != nil {
		return brokerUserError(cluster, fmt.Errorf("the contract's transport URL: %w", err))
	}
	spelled := novaconfig.EnvLiteral(transportURL)
	delivered := live != nil && string(live.Data[novaconfig.KeyTransportURL]) == spelled
	if err := r.ensureBrokerUser(ctx, p, cluster, admin, password, vhost, !delivered); err != nil {
		return err
	}
	data[novaconfig.KeyTransportURL] = []byte(spelled)
	return nil
}

// ensureBrokerUser creates a cluster's broker user through the named admin
// Secret, or brings it up to date, and records it in status. A user created
// through another admin Secret is deleted through that one first, since the
// new Secret may name another broker.
func (r *Reconciler) ensureBrokerUser(ctx context.Context, p *pass, cluster, admin, password, vhost string, setPassword bool) error {
	if old, ok := findBrokerUser(p.cp.Status.BrokerUsers, cluster); ok && old.AdminSecret != admin {
		if err := r.deleteBrokerUser(ctx, p, old); err != nil {
			return err
		}
	}
	c, err := r.brokerAdmin(ctx, p.cp, admin)
	if err != nil {
		return err
	}
	user, tag := ComputeUserName(cluster), BrokerUserTag(p.cp)
	tags, found, err := c.User(ctx, user)
	if err != nil {
		return brokerUserError(cluster, err)
	}
	if found && !slices.Contains(tags, tag) {
		return brokerUserError(cluster, fmt.Errorf("broker user %s exists and is not this ControlPlane's (it lacks the tag %s)", user, tag))
	}
	// Recorded before the first write: a pass that fails after it still
	// leaves the user to be deleted.
	p.cp.Status.BrokerUsers = recordBrokerUser(p.cp.Status.BrokerUsers, c5c3v1alpha1.BrokerUser{Cluster: cluster, User: user, AdminSecret: admin})
	if !found || setPassword {
		if err := c.PutUser(ctx, user, password, []string{tag}); err != nil {
			return brokerUserError(cluster, err)
		}
	}
	rights, found, err := c.Permissions(ctx, vhost, user)
	if err != nil {
		return brokerUserError(cluster, err)
	}
	if !found || rights != brokerRights {
		if err := c.SetPermissions(ctx, vhost, user, brokerRights); err != nil {
			return brokerUserError(cluster, err)
		}
	}
	return nil
}

// pruneBrokerUsers deletes the broker users no cluster should have any
// more: its cluster left or lost its own credentials, the admin Secret
// changed or went, or the ControlPlane is being deleted. keep are the
// clusters that get their own credentials this pass.
func (r *Reconciler) pruneBrokerUsers(ctx context.Context, p *pass, keep map[string]bool) error {
	admin := brokerAdminName(p.cp)
	if !p.cp.DeletionTimestamp.IsZero() {
		admin = ""
	}
	for _, u := range BrokerUsersToDelete(p.cp.Status.BrokerUsers, keep, admin) {
		if err := r.deleteBrokerUser(ctx, p, u); err != nil {
			return err
		}
	}
	return nil
}

// BrokerUsersToDelete decides which recorded broker users go: those of a
// cluster not in keep, and every one created through another admin Secret
// than admin ("" when the ControlPlane names none, or is being deleted).
// It is pure.
func BrokerUsersToDelete(users []c5c3v1alpha1.BrokerUser, keep map[string]bool, admin string) []c5c3v1alpha1.BrokerUser {
	var out []c5c3v1alpha1.BrokerUser
	for _, u := range users {
		if admin == "" || u.AdminSecret != admin || !keep[u.Cluster] {
			out = append(out, u)
		}
	}
	return out
}

// deleteBrokerUser deletes a recorded broker user if it still carries the
// mark, and forgets it. When its admin Secret is gone nothing can reach
// the broker as its administrator: the user is forgotten with a Warning
// event that names it, rather than holding the ControlPlane forever.
func (r *Reconciler) deleteBrokerUser(ctx context.Context, p *pass, u c5c3v1alpha1.BrokerUser) error {
	c, err := r.brokerAdmin(ctx, p.cp, u.AdminSecret)
	var step *flow.StepError
	switch {
	case errors.As(err, &step) && step.Reason == c5c3v1alpha1.WaitingForBrokerAdminReason:
		r.Recorder.Eventf(p.cp, nil, corev1.EventTypeWarning, c5c3v1alpha1.BrokerUserAbandonedEvent, "Delete",
			"broker user %s of compute cluster %s was not deleted: its admin Secret %s cannot be used (%s); delete the user on the broker",
			u.User, u.Cluster, u.AdminSecret, step.Err.Error())
	case err != nil:
		return err
	default:
		tags, found, err := c.User(ctx, u.User)
		if err != nil {
			return brokerUserError(u.Cluster, err)
		}
		// A user that lost the mark is somebody else's now.
		if found && slices.Contains(tags, BrokerUserTag(p.cp)) {
			if err := c.DeleteUser(ctx, u.User); err != nil {
				return brokerUserError(u.Cluster, err)
			}
		}
	}
	p.cp.Status.BrokerUsers = slices.DeleteFunc(p.cp.Status.BrokerUsers, func(x c5c3v1alpha1.BrokerUser) bool { return x.Cluster == u.Cluster })
	return nil
}

// brokerAdmin reads the named broker admin Secret into a client, once per
// pass. A Secret that is missing or incomplete is waited for.
func (r *Reconciler) brokerAdmin(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, name string) (*brokeradmin.Client, error) {
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: name}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if apierrors.IsNotFound(err) {
		return nil, flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForBrokerAdminReason, waitRequeue,
			"the broker admin Secret %s/%s does not exist", cp.Namespace, name)
	}
	c, err := brokeradmin.New(s.Data)
	if err != nil {
		return nil, flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForBrokerAdminReason, waitRequeue,
			"the broker admin Secret %s/%s: %s", cp.Namespace, name, err.Error())
	}
	return c, nil
}

// brokerUserError files a failure of a cluster's broker user.
func brokerUserError(cluster string, err error) error {
	return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.BrokerUserErrorReason,
		fmt.Errorf("the broker user of compute cluster %s: %w", cluster, err))
}

// findBrokerUser returns the recorded broker user of cluster.
func findBrokerUser(users []c5c3v1alpha1.BrokerUser, cluster string) (c5c3v1alpha1.BrokerUser, bool) {
	for _, u := range users {
		if u.Cluster == cluster {
			return u, true
		}
	}
	return c5c3v1alpha1.BrokerUser{}, false
}

// recordBrokerUser returns users with u recorded in place of any entry of
// its cluster, sorted by cluster so that status does not churn. It is pure.
func recordBrokerUser(users []c5c3v1alpha1.BrokerUser, u c5c3v1alpha1.BrokerUser) []c5c3v1alpha1.BrokerUser {
	out := slices.DeleteFunc(slices.Clone(users), func(x c5c3v1alpha1.BrokerUser) bool { return x.Cluster == u.Cluster })
	out = append(out, u)
	slices.SortFunc(out, func(a, b c5c3v1alpha1.BrokerUser) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}
