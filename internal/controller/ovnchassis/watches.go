package ovnchassis

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
)

// centralRefIndex indexes chassis by the name of their central.
const centralRefIndex = "ovnchassis.centralRef"

// Labels the central's certificate Secrets carry; the Secret watch finds
// the central, and through it the chassis, of a renewed identity.
const (
	centralNameValue = "ovncentral"
	instanceKey      = "app.kubernetes.io/instance"
	nameKey          = "app.kubernetes.io/name"
)

// SetupWithManager wires the controller (spec §3.9): the chassis, its own
// children, its central (status changes matter, so every event counts),
// Nodes whose labels change, on the management cluster and on every
// compute cluster, the central's client Secret, so a new CA reaches the
// published copy at watch latency, and the nodes' identities.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("ovnchassis-controller")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Teardown == nil && r.Registry != nil {
		r.Teardown = &placement.Teardown{Registry: r.Registry, Scheme: r.Scheme, Recorder: r.Recorder}
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &ovnv1alpha1.OVNChassis{}, centralRefIndex, func(o client.Object) []string {
		return []string{o.(*ovnv1alpha1.OVNChassis).Spec.CentralRef.Name}
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("ovnchassis-controller").
		For(&ovnv1alpha1.OVNChassis{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.Secret{}).
		Watches(&ovnv1alpha1.OVNCentral{}, handler.EnqueueRequestsFromMapFunc(r.chassisOfCentral)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return r.chassisOn(ctx, "")
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return labelsChanged(e.ObjectOld, e.ObjectNew)
		}})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, s client.Object) []reconcile.Request {
			return r.chassisOfSecret(ctx, s)
		}))
	if r.Registry != nil {
		if err := r.remoteWatches(ctx, mgr, b); err != nil {
			return err
		}
	}
	return b.Complete(r)
}

// remoteWatches adds the compute-cluster legs of the same watches.
func (r *Reconciler) remoteWatches(ctx context.Context, mgr ctrl.Manager, b *builder.Builder) error {
	if err := targetcluster.IndexTargetCluster(ctx, mgr.GetFieldIndexer(), &ovnv1alpha1.OVNChassis{}); err != nil {
		return err
	}
	for _, o := range []client.Object{&appsv1.DaemonSet{}, &corev1.ConfigMap{}, &batchv1.Job{}, &corev1.Secret{}} {
		children, err := r.Registry.RemoteChildren(o, &ovnv1alpha1.OVNChassis{})
		if err != nil {
			return err
		}
		b.WatchesRawSource(children)
	}
	nodes, err := r.Registry.RemoteObjects(&corev1.Node{}, labelsChanged, func(ctx context.Context, cluster string, _ client.Object) []reconcile.Request {
		return r.chassisOn(ctx, cluster)
	})
	if err != nil {
		return err
	}
	b.WatchesRawSource(nodes).
		WatchesRawSource(r.Registry.ClusterChanges(func() client.ObjectList { return &ovnv1alpha1.OVNChassisList{} }))
	return nil
}

// labelsChanged keeps Node updates that change labels, the only part of a
// Node the chassis reads; heartbeats are dropped.
func labelsChanged(old, updated client.Object) bool {
	return !maps.Equal(old.GetLabels(), updated.GetLabels())
}

// chassisOfCentral maps a central to the chassis that reference it.
func (r *Reconciler) chassisOfCentral(ctx context.Context, central client.Object) []reconcile.Request {
	return r.list(ctx, client.InNamespace(central.GetNamespace()), client.MatchingFields{centralRefIndex: central.GetName()})
}

// chassisOn maps a Node event on cluster ("" for the management cluster)
// to every chassis placed there.
func (r *Reconciler) chassisOn(ctx context.Context, cluster string) []reconcile.Request {
	if cluster != "" {
		return r.list(ctx, client.MatchingFields{targetcluster.TargetClusterIndex: cluster})
	}
	list := &ovnv1alpha1.OVNChassisList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].TargetClusterName() == "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// chassisOfSecret maps a Secret of the management cluster to chassis: a
// central's client Secret to the chassis of that central, and a node
// identity cert-manager issued to its chassis, so a new node's identity is
// delivered at watch latency rather than at the next poll. Compute
// clusters hold no central a chassis uses, so their Secrets are not
// watched beyond the chassis's own children.
func (r *Reconciler) chassisOfSecret(ctx context.Context, s client.Object) []reconcile.Request {
	l := s.GetLabels()
	if l[nameKey] == nameValue && l[componentLabel] == IdentityComponent && l[instanceKey] != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: s.GetNamespace(), Name: l[instanceKey]}}}
	}
	if l[nameKey] != centralNameValue || l[instanceKey] == "" {
		return nil
	}
	central := &ovnv1alpha1.OVNCentral{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.GetNamespace(), Name: l[instanceKey]}, central); err != nil ||
		central.TargetClusterName() != "" || central.Status.ClientSecretName != s.GetName() {
		return nil
	}
	return r.chassisOfCentral(ctx, central)
}

// list returns a request per chassis the options select.
func (r *Reconciler) list(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &ovnv1alpha1.OVNChassisList{}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
