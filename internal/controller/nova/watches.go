package nova

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
)

// inputSecretIndex indexes Novas by the names of the Secrets they read.
const inputSecretIndex = "nova.inputSecrets"

// inputSecretNames lists the Secrets a Nova's contract and its nova-manage
// configuration are rendered from.
func inputSecretNames(nova *novav1alpha1.Nova) []string {
	names := []string{
		nova.Spec.Messaging.SecretRef.Name,
		nova.Spec.ServiceUser.SecretRef.Name,
		nova.Spec.Metadata.SharedSecretRef.Name,
	}
	if tls := nova.Spec.Messaging.TLS; tls != nil {
		names = append(names, tls.CABundleSecretRef.Name)
	}
	if rc := nova.Spec.RemoteCompute; rc != nil {
		names = append(names, rc.TransportURLSecretRef.Name)
	}
	for _, db := range []*novav1alpha1.DatabaseSpec{nova.Spec.APIDatabase, nova.Spec.Database} {
		if db != nil {
			names = append(names, db.SecretRef.Name)
		}
	}
	return names
}

// SetupWithManager wires the controller. Besides the Nova itself it watches
// its own children (to follow Jobs and rollouts and to repair drift) and
// every input Secret, so a rotated password re-renders at once.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("nova-controller")
	}
	if r.Teardown == nil && r.Registry != nil {
		r.Teardown = &placement.Teardown{Registry: r.Registry, Scheme: r.Scheme, Recorder: r.Recorder}
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &novav1alpha1.Nova{}, inputSecretIndex, func(o client.Object) []string {
		return inputSecretNames(o.(*novav1alpha1.Nova))
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("nova-controller").
		For(&novav1alpha1.Nova{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Secret{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}, builder.WithPredicates(rolloutProgress)).
		Owns(&batchv1.Job{}, builder.WithPredicates(rolloutProgress)).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.novasReading))
	if r.Registry != nil {
		if err := targetcluster.IndexTargetCluster(ctx, mgr.GetFieldIndexer(), &novav1alpha1.Nova{}); err != nil {
			return err
		}
		children, err := r.Registry.RemoteChildren(&corev1.Secret{}, &novav1alpha1.Nova{})
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(children).
			WatchesRawSource(r.Registry.ClusterChanges(func() client.ObjectList { return &novav1alpha1.NovaList{} }))
	}
	return b.Complete(r)
}

// novasReading maps a Secret to the Novas in its namespace that read it.
func (r *Reconciler) novasReading(ctx context.Context, s client.Object) []reconcile.Request {
	list := &novav1alpha1.NovaList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.GetNamespace()), client.MatchingFields{inputSecretIndex: s.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
