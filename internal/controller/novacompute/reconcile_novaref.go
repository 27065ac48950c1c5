package novacompute

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/openstack"
)

// reconcileNovaRef reads the Nova and what the pool takes from it: the
// image, the contract's name, where both clusters are, and the service
// user's credentials. The checks run in a fixed order, so the first gap is
// the one reported.
func (r *Reconciler) reconcileNovaRef(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	nova := &novav1alpha1.Nova{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: pool.Spec.NovaRef.Name}, nova)
	switch {
	case apierrors.IsNotFound(err):
		return p.novaWait(novav1alpha1.NovaNotFoundReason, "Nova %s/%s does not exist", pool.Namespace, pool.Spec.NovaRef.Name)
	case err != nil:
		return flow.Continue, flow.Fail(novav1alpha1.NovaReadyCondition, novav1alpha1.NovaErrorReason,
			fmt.Errorf("reading Nova %s: %w", pool.Spec.NovaRef.Name, err))
	}
	p.nova = nova
	// The pool authenticates at the Nova's keystoneEndpoint with the
	// service password, so it checks the host itself: the Nova may have
	// published its contract under an earlier spec or a wider policy.
	cp, err := keystonepolicy.ControlPlaneOf(ctx, r.Client, nova)
	if err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.NovaReadyCondition, novav1alpha1.NovaErrorReason, err)
	}
	p.projected = cp != nil
	if errs := r.Keystone.Check(nova, cp); len(errs) > 0 {
		return flow.Continue, flow.Invalid(novav1alpha1.NovaReadyCondition, novav1alpha1.KeystoneEndpointNotAllowedReason,
			fmt.Errorf("the Nova %s: %w", nova.Name, errs.ToAggregate()))
	}
	if pool.Spec.Image == nil && nova.Status.InstalledRelease == "" {
		return p.novaWait(novav1alpha1.WaitingForInstalledReleaseReason, "Nova %s reports no installed release yet; the pool's default image follows it", nova.Name)
	}
	if nova.Status.ComputeConfigSecretRef == nil {
		return p.novaWait(novav1alpha1.ComputeConfigNotPublishedReason, "Nova %s has not published its compute contract yet", nova.Name)
	}
	at, err := placement.Resolve(ctx, r.placement(), pool)
	if err != nil {
		return flow.Continue, err
	}
	// Locally the pool reads past the cache too, so node and ownership
	// decisions never act on stale data.
	if p.cluster = at.Children; !at.Remote() {
		p.cluster = r.local()
	}
	// A scoped registration admits pools of the namespaces it lists only.
	if !p.cluster.Allows(pool.Namespace) {
		return p.novaWait(anvilmeta.TargetClusterUnavailableReason, "%s",
			(&childwriter.NamespaceNotAllowedError{Cluster: p.cluster.Cluster, Namespace: pool.Namespace}).Error())
	}
	if p.novaCluster, err = r.Registry.WriterFor(nova.TargetClusterName(), r.local()); err != nil {
		return p.novaWait(anvilmeta.TargetClusterUnavailableReason, "the Nova's cluster: %s", err.Error())
	}
	ref := nova.Spec.ServiceUser.SecretRef
	key := cmp.Or(ref.Key, "password")
	secret := &corev1.Secret{}
	err = p.novaCluster.Reader.Get(ctx, client.ObjectKey{Namespace: nova.Namespace, Name: ref.Name}, secret)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && len(secret.Data[key]) == 0):
		return p.novaWait(novav1alpha1.WaitingForServiceUserSecretReason,
			"Nova %s: spec.serviceUser.secretRef names Secret %s key %s, which does not exist or is empty", nova.Name, ref.Name, key)
	case err != nil:
		return flow.Continue, flow.Fail(novav1alpha1.NovaReadyCondition, novav1alpha1.NovaErrorReason,
			fmt.Errorf("reading the service user's Secret %s: %w", ref.Name, err))
	}
	su := nova.Spec.ServiceUser
	p.creds = openstack.Credentials{
		AuthURL: nova.Spec.KeystoneEndpoint, Username: cmp.Or(su.Username, "nova"), Password: string(secret.Data[key]),
		ProjectName: cmp.Or(su.ProjectName, "service"), UserDomainName: cmp.Or(su.UserDomainName, "Default"),
		ProjectDomainName: cmp.Or(su.ProjectDomainName, "Default"), Region: nova.Spec.Region, Interface: "internal",
	}
	p.image, p.pullPolicy = resolveImage(pool, nova)
	conditionsOf(pool).Set(novav1alpha1.NovaReadyCondition, metav1.ConditionTrue, novav1alpha1.NovaResolvedReason,
		fmt.Sprintf("Nova %s, image %s", nova.Name, p.image))
	return flow.Continue, nil
}

// novaWait stops the pass at a NovaReady wait.
func (p *pass) novaWait(reason, format string, args ...any) (flow.Outcome, error) {
	return flow.Continue, flow.Wait(novav1alpha1.NovaReadyCondition, reason, inputRequeue, format, args...)
}

// resolveImage returns the pool's image: spec.image, else the default
// nova-compute image of the Nova's installed release. It is resolved on
// every pass and never written back, so a pool without an image follows
// the control plane once its schemas moved.
func resolveImage(pool *novav1alpha1.NovaCompute, nova *novav1alpha1.Nova) (string, corev1.PullPolicy) {
	img := pool.Spec.Image
	if img == nil {
		return novav1alpha1.DefaultComputeImageRepository + ":" + nova.Status.InstalledRelease, ""
	}
	return img.Reference(), corev1.PullPolicy(img.PullPolicy)
}
