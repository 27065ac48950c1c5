package controlplane

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// secretIndex indexes ControlPlanes by the names of the Secrets they read,
// including their Nova's published contracts.
const secretIndex = "controlplane.secrets"

// ReadSecretNames lists every Secret a ControlPlane's pass reads.
func ReadSecretNames(cp *c5c3v1alpha1.ControlPlane) []string {
	var names []string
	if m := cp.Spec.Infrastructure.Messaging; m != nil {
		names = append(names, m.SecretRef.Name)
		if m.TLS != nil {
			names = append(names, m.TLS.CABundleSecretRef.Name)
		}
	}
	if n := cp.Spec.Services.Nova; n != nil {
		// The service password is an input of the contract the mirrors
		// carry, which a pass renders itself; the in-cluster contract is
		// where the metadata agents' copy comes from.
		names = append(names, n.ServiceUserSecretRef.Name, NovaName(cp)+novav1alpha1.ComputeConfigSuffix)
		if rc := n.RemoteCompute; rc != nil {
			names = append(names, rc.TransportURLSecretRef.Name)
			if rc.BrokerAdminSecretRef != nil {
				names = append(names, rc.BrokerAdminSecretRef.Name)
			}
		}
		if n.MetadataSharedSecretRef != nil {
			names = append(names, n.MetadataSharedSecretRef.Name)
		}
	}
	if ks := cp.Spec.Services.Keystone; ks != nil && ks.AdminCredentialsSecretRef != nil {
		names = append(names, ks.AdminCredentialsSecretRef.Name)
	}
	return names
}

// poolLifecycle passes a pool's creation, deletion, the start of its
// deletion and a spec change, which move mirror targets, and a change of
// the contract hash it has rolled out, which moves a rotation.
var poolLifecycle = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil {
			return true
		}
		// A new spec can move the pool policy's verdict, and so the targets.
		if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
			return true
		}
		old, okOld := e.ObjectOld.(*novav1alpha1.NovaCompute)
		updated, okNew := e.ObjectNew.(*novav1alpha1.NovaCompute)
		return okOld && okNew && old.Status.RolledOutContractHash != updated.Status.RolledOutContractHash
	},
}

// novaGateChanged passes the Nova events a pass acts on: its creation and
// deletion, a change of its spec or metadata, and a new answer from
// DecideNovaGate, the one gate its status feeds. A rolling
// Nova rewrites its status many times a change; each of those passes
// would find nothing new and hold the cores the mirrors need.
var novaGateChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*novav1alpha1.Nova)
		updated, okNew := e.ObjectNew.(*novav1alpha1.Nova)
		if !okOld || !okNew {
			return true
		}
		return NovaGateChanged(old, updated)
	},
}

// NovaGateChanged tells whether an update of a Nova can change what a
// ControlPlane pass does with it. It is pure, so the rules are
// table-tested.
func NovaGateChanged(old, updated *novav1alpha1.Nova) bool {
	return old.Generation != updated.Generation ||
		old.DeletionTimestamp.IsZero() != updated.DeletionTimestamp.IsZero() ||
		!maps.Equal(old.Labels, updated.Labels) || !maps.Equal(old.Annotations, updated.Annotations) ||
		!slices.EqualFunc(old.OwnerReferences, updated.OwnerReferences, func(a, b metav1.OwnerReference) bool { return a.UID == b.UID }) ||
		DecideNovaGate(old) != DecideNovaGate(updated)
}

// SetupWithManager wires the controller: the ControlPlane, its local
// children, every Secret it reads, the lifecycle of its Nova's pools, its
// mirrors on compute clusters, and the clusters' comings and goings.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("controlplane-controller")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Keystone == nil {
		r.Keystone = CachedKeystone(openstack.NewSessionCache())
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &c5c3v1alpha1.ControlPlane{}, secretIndex, func(o client.Object) []string {
		return ReadSecretNames(o.(*c5c3v1alpha1.ControlPlane))
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("controlplane-controller").
		// An annotation asks to reissue a cluster's credentials.
		For(&c5c3v1alpha1.ControlPlane{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&novav1alpha1.Nova{}, builder.WithPredicates(novaGateChanged)).
		Owns(&corev1.Secret{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesReading)).
		Watches(&novav1alpha1.NovaCompute{}, handler.EnqueueRequestsFromMapFunc(r.controlPlaneOfPool), builder.WithPredicates(poolLifecycle)).
		Watches(&ovnv1alpha1.OVNCentral{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesOfCentral)).
		Watches(&neutronv1alpha1.NeutronMetadataAgent{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesOfAgent),
			builder.WithPredicates(agentCopyChanged))
	if r.Registry != nil {
		mirrors, err := r.Registry.RemoteChildrenFromAnyCluster(&corev1.Secret{}, &c5c3v1alpha1.ControlPlane{})
		if err != nil {
			return err
		}
		// A compute cluster's owner grants or revokes the hypervisor
		// operator's copy with a label on the namespace there.
		namespaces, err := r.Registry.RemoteObjects(&corev1.Namespace{}, AuthOptInChanged, r.controlPlanesInNamespace)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(mirrors).WatchesRawSource(namespaces).
			WatchesRawSource(r.Registry.AnyClusterChanges(func() client.ObjectList { return &c5c3v1alpha1.ControlPlaneList{} }))
	}
	return b.Complete(r)
}

// AuthOptInChanged tells whether a Namespace's update changed its answer
// to the hypervisor operator's copy; other label and status changes of a
// compute cluster's namespaces start no pass.
func AuthOptInChanged(old, updated client.Object) bool {
	return OptsInToAuthCopy(old.GetLabels()) != OptsInToAuthCopy(updated.GetLabels())
}

// controlPlanesInNamespace maps a compute cluster's Namespace to the
// ControlPlanes of the same name's namespace here, whose copies go there.
func (r *Reconciler) controlPlanesInNamespace(ctx context.Context, _ string, ns client.Object) []reconcile.Request {
	list := &c5c3v1alpha1.ControlPlaneList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// controlPlanesReading maps a Secret to the ControlPlanes in its namespace
// that read it.
func (r *Reconciler) controlPlanesReading(ctx context.Context, s client.Object) []reconcile.Request {
	list := &c5c3v1alpha1.ControlPlaneList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.GetNamespace()), client.MatchingFields{secretIndex: s.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// controlPlaneOfPool maps a pool to the ControlPlane that owns its Nova.
func (r *Reconciler) controlPlaneOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	pool, ok := o.(*novav1alpha1.NovaCompute)
	if !ok || pool.Spec.NovaRef.Name == "" {
		return nil
	}
	nova := &novav1alpha1.Nova{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: pool.Spec.NovaRef.Name}, nova); err != nil {
		return nil
	}
	ref := metav1.GetControllerOf(nova)
	if ref == nil || ref.Kind != "ControlPlane" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: nova.Namespace, Name: ref.Name}}}
}

// controlPlanesOfCentral maps an OVNCentral to the ControlPlanes whose
// services.neutron.ovn.centralRef resolves to it; its status changes
// matter, so every event counts.
func (r *Reconciler) controlPlanesOfCentral(ctx context.Context, central client.Object) []reconcile.Request {
	list := &c5c3v1alpha1.ControlPlaneList{}
	if err := r.Client.List(ctx, list, client.InNamespace(central.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		n := list.Items[i].Spec.Services.Neutron
		if n != nil && n.OVN != nil && n.OVN.CentralRef.Name == central.GetName() &&
			n.OVN.CentralRef.ResolvedNamespace(list.Items[i].Namespace) == central.GetNamespace() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// agentCopyChanged keeps the agent events that change which clusters need
// the shared secret's copy: a new or deleted agent, the start of its
// deletion, and a change of the Secret it names.
var agentCopyChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*neutronv1alpha1.NeutronMetadataAgent)
		updated, okNew := e.ObjectNew.(*neutronv1alpha1.NeutronMetadataAgent)
		if !okOld || !okNew {
			return false
		}
		return old.DeletionTimestamp.IsZero() != updated.DeletionTimestamp.IsZero() ||
			sharedSecretName(old) != sharedSecretName(updated) || old.TargetClusterName() != updated.TargetClusterName()
	},
}

// sharedSecretName is the Secret an agent signs with, or "".
func sharedSecretName(a *neutronv1alpha1.NeutronMetadataAgent) string {
	if ref := a.Spec.NovaMetadata.SharedSecretRef; ref != nil {
		return ref.Name
	}
	return ""
}

// controlPlanesOfAgent maps an agent to the ControlPlanes in its namespace
// that run Nova and reference Neutron: the ones that may owe it a copy.
func (r *Reconciler) controlPlanesOfAgent(ctx context.Context, agent client.Object) []reconcile.Request {
	list := &c5c3v1alpha1.ControlPlaneList{}
	if err := r.Client.List(ctx, list, client.InNamespace(agent.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		svc := list.Items[i].Spec.Services
		if svc.Nova != nil && svc.Neutron != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
