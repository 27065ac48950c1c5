package neutronmetadataagent

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
)

// Field indexes on the management cluster's cache. The central index is
// this controller's own, so that it does not depend on the OVNChassis
// controller running in the same manager.
const (
	// secretRefIndex indexes agents by the Secrets they reference.
	secretRefIndex = "neutronmetadataagent.spec.secretRefs.name"
	// chassisRefIndex indexes agents by their chassis.
	chassisRefIndex = "neutronmetadataagent.spec.chassisRef.name"
	// centralRefIndex indexes chassis by their central.
	centralRefIndex = "neutronmetadataagent.ovnchassis.spec.centralRef.name"
)

// SetupWithManager wires the controller (spec §4.5): the agent, its own
// children on every cluster, the Secrets it references wherever it runs,
// its chassis, and its chassis's central. Chassis and central events are
// not filtered by generation: their status, which the agent reads, is what
// changes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("neutronmetadataagent-controller")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Teardown == nil && r.Registry != nil {
		r.Teardown = &placement.Teardown{Registry: r.Registry, Scheme: r.Scheme, Recorder: r.Recorder}
	}
	if err := r.index(ctx, mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("neutronmetadataagent-controller").
		For(&neutronv1alpha1.NeutronMetadataAgent{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, s client.Object) []reconcile.Request {
			return r.agentsOfSecret(ctx, "", s)
		})).
		Watches(&ovnv1alpha1.OVNChassis{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfChassis)).
		Watches(&ovnv1alpha1.OVNCentral{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfCentral))
	if r.Registry != nil {
		if err := r.remoteWatches(ctx, mgr, b); err != nil {
			return err
		}
	}
	return b.Complete(r)
}

// index registers the field indexes the mappers list by.
func (r *Reconciler) index(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &neutronv1alpha1.NeutronMetadataAgent{}, secretRefIndex, func(o client.Object) []string {
		nm := o.(*neutronv1alpha1.NeutronMetadataAgent).Spec.NovaMetadata
		var names []string
		for _, ref := range []*neutronv1alpha1.SecretKeyRef{nm.SharedSecretRef, nm.CABundleSecretRef} {
			if ref != nil {
				names = append(names, ref.Name)
			}
		}
		return names
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &neutronv1alpha1.NeutronMetadataAgent{}, chassisRefIndex, func(o client.Object) []string {
		return []string{o.(*neutronv1alpha1.NeutronMetadataAgent).Spec.ChassisRef.Name}
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &ovnv1alpha1.OVNChassis{}, centralRefIndex, func(o client.Object) []string {
		return []string{o.(*ovnv1alpha1.OVNChassis).Spec.CentralRef.Name}
	})
}

// remoteWatches adds the compute-cluster legs: the agent's children, the
// Secrets it references there, and the engagement of its cluster.
func (r *Reconciler) remoteWatches(ctx context.Context, mgr ctrl.Manager, b *builder.Builder) error {
	if err := targetcluster.IndexTargetCluster(ctx, mgr.GetFieldIndexer(), &neutronv1alpha1.NeutronMetadataAgent{}); err != nil {
		return err
	}
	for _, o := range []client.Object{&appsv1.DaemonSet{}, &corev1.ConfigMap{}} {
		children, err := r.Registry.RemoteChildren(o, &neutronv1alpha1.NeutronMetadataAgent{})
		if err != nil {
			return err
		}
		b.WatchesRawSource(children)
	}
	secrets, err := r.Registry.RemoteObjects(&corev1.Secret{}, nil, r.agentsOfSecret)
	if err != nil {
		return err
	}
	b.WatchesRawSource(secrets).
		WatchesRawSource(r.Registry.ClusterChanges(func() client.ObjectList { return &neutronv1alpha1.NeutronMetadataAgentList{} }))
	return nil
}

// agentsOfSecret maps a Secret seen on cluster ("" for the management
// cluster) to the agents of its namespace that reference it and run
// there; an agent elsewhere reads a Secret of the same name on its own
// cluster.
func (r *Reconciler) agentsOfSecret(ctx context.Context, cluster string, s client.Object) []reconcile.Request {
	return r.list(ctx, func(a *neutronv1alpha1.NeutronMetadataAgent) bool { return a.TargetClusterName() == cluster },
		client.InNamespace(s.GetNamespace()), client.MatchingFields{secretRefIndex: s.GetName()})
}

// agentsOfChassis maps a chassis to the agents that run beside it.
func (r *Reconciler) agentsOfChassis(ctx context.Context, chassis client.Object) []reconcile.Request {
	return r.list(ctx, nil, client.InNamespace(chassis.GetNamespace()), client.MatchingFields{chassisRefIndex: chassis.GetName()})
}

// agentsOfCentral maps a central to the agents of the chassis that
// connect to it: its addresses are what the agents read.
func (r *Reconciler) agentsOfCentral(ctx context.Context, central client.Object) []reconcile.Request {
	chassis := &ovnv1alpha1.OVNChassisList{}
	if err := r.Client.List(ctx, chassis, client.InNamespace(central.GetNamespace()),
		client.MatchingFields{centralRefIndex: central.GetName()}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range chassis.Items {
		reqs = append(reqs, r.agentsOfChassis(ctx, &chassis.Items[i])...)
	}
	return reqs
}

// list returns a request per agent the options select and keep accepts
// (nil keeps all).
func (r *Reconciler) list(ctx context.Context, keep func(*neutronv1alpha1.NeutronMetadataAgent) bool, opts ...client.ListOption) []reconcile.Request {
	list := &neutronv1alpha1.NeutronMetadataAgentList{}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
