package ovncentral

import (
	"context"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
)

// SetupWithManager wires the controller: the central itself, and every
// child kind, so that members joining, rollouts and issued certificates
// bring the next pass. Certificates are watched only where cert-manager's
// kind is served when the operator starts; without it the TLS step polls.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("ovncentral-controller")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Teardown == nil && r.Registry != nil {
		r.Teardown = &placement.Teardown{Registry: r.Registry, Scheme: r.Scheme, Recorder: r.Recorder}
	}
	owned := []client.Object{
		&appsv1.StatefulSet{}, &appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{},
		&corev1.PersistentVolumeClaim{}, &batchv1.CronJob{}, &batchv1.Job{}, &policyv1.PodDisruptionBudget{},
	}
	if served, err := certificatesServed(mgr); err != nil {
		return err
	} else if served {
		owned = append(owned, &cmv1.Certificate{}, &cmv1.Issuer{})
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("ovncentral-controller").
		For(&ovnv1alpha1.OVNCentral{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	for _, o := range owned {
		b = b.Owns(o)
	}
	// Only a central on the management cluster has a NetworkPolicy, so no
	// compute cluster is watched for one.
	b = b.Owns(&networkingv1.NetworkPolicy{})
	if r.Registry != nil {
		if err := targetcluster.IndexTargetCluster(ctx, mgr.GetFieldIndexer(), &ovnv1alpha1.OVNCentral{}); err != nil {
			return err
		}
		for _, o := range owned {
			children, err := r.Registry.RemoteChildren(o, &ovnv1alpha1.OVNCentral{})
			if err != nil {
				return err
			}
			b = b.WatchesRawSource(children)
		}
		b = b.WatchesRawSource(r.Registry.ClusterChanges(func() client.ObjectList { return &ovnv1alpha1.OVNCentralList{} }))
	}
	return b.Complete(r)
}

// certificatesServed asks the management cluster whether cert-manager's
// Certificate kind exists.
func certificatesServed(mgr ctrl.Manager) (bool, error) {
	gvk := cmv1.SchemeGroupVersion.WithKind(cmv1.CertificateKind)
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return true, nil
	}
	if isNoMatch(err) {
		return false, nil
	}
	return false, err
}
