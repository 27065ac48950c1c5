package neutronmetadataagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/placement"
)

// release lets a local agent's children go with their ownerReferences. A
// placed agent whose cluster resolves first reaps the shared secret's
// copies no other agent there reads; then the placement protocol sweeps
// its children and releases its finalizer, or waits for its cluster and
// lets it go without a reap or sweep once the teardown gives the cluster
// up. Any error keeps the finalizer.
func (r *Reconciler) release(ctx context.Context, a *neutronv1alpha1.NeutronMetadataAgent) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(a, placement.RemoteChildrenFinalizer) {
		return ctrl.Result{}, nil
	}
	if remote, err := r.Registry.Resolve(a.TargetClusterName()); err == nil {
		if err := r.reapMirrors(ctx, remote.Writer(), a); err != nil {
			return ctrl.Result{}, fmt.Errorf("reaping the shared secret's copies: %w", err)
		}
	}
	return r.placement().Release(ctx, a, conditionsOf(a))
}

// reapMirrors deletes the copy of the shared secret in the agent's
// namespace on its cluster that MirrorsToReap gives up, with a Normal
// event. Both lists are read past any cache: a stale list of
// agents could reap a copy another agent just started to read, and a
// stale list of Secrets could miss a label. Each deletion checks the label
// again on the live object and is conditional on its UID, so neither a
// Secret without the ControlPlane's labels nor one recreated meanwhile is
// ever deleted.
func (r *Reconciler) reapMirrors(ctx context.Context, cluster *childwriter.Writer, a *neutronv1alpha1.NeutronMetadataAgent) error {
	secrets := &corev1.SecretList{}
	if err := cluster.Reader.List(ctx, secrets, client.InNamespace(a.Namespace),
		client.MatchingLabels{neutronv1alpha1.MetadataSharedSecretMirrorLabel: "true"}); err != nil {
		return fmt.Errorf("listing the copies: %w", err)
	}
	if len(secrets.Items) == 0 {
		return nil
	}
	agents := &neutronv1alpha1.NeutronMetadataAgentList{}
	if err := r.APIReader.List(ctx, agents, client.InNamespace(a.Namespace)); err != nil {
		return fmt.Errorf("listing the agents: %w", err)
	}
	for _, name := range MirrorsToReap(a, secrets.Items, agents.Items) {
		deleted, err := cluster.DeleteIf(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: name}},
			func(live client.Object) bool { return isDeliveredCopy(live) })
		if err != nil {
			return fmt.Errorf("deleting %s: %w", name, err)
		}
		if !deleted {
			continue
		}
		// The Secret is the related object, so that two copies reaped in
		// one teardown stay two events instead of one series.
		r.Recorder.Eventf(a, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: a.Namespace, Name: name},
			corev1.EventTypeNormal, neutronv1alpha1.MetadataSharedSecretMirrorReapedEvent, "Delete",
			"Deleted the metadata shared-secret mirror %s: no other NeutronMetadataAgent on this cluster names it", name)
	}
	return nil
}
