package novacompute

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/controller/workload"
	"github.com/anvil/anvil/internal/openstack"
	"github.com/anvil/anvil/internal/targetcluster"
)

// SetupWithManager wires the controller. Besides the pool itself it
// watches what the pool's passes read: its DaemonSet and ConfigMaps, its
// Nova, its sibling pools, the delivered contract and the Nodes of its
// cluster. The Services step polls Nova, which cannot be watched.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("novacompute-controller")
	}
	if r.Teardown == nil && r.Registry != nil {
		r.Teardown = &placement.Teardown{Registry: r.Registry, Scheme: r.Scheme, Recorder: r.Recorder}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Cloud == nil {
		r.Cloud = CachedSessionCloud(openstack.NewSessionCache())
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &novav1alpha1.NovaCompute{}, NovaRefIndex, func(o client.Object) []string {
		return []string{o.(*novav1alpha1.NovaCompute).Spec.NovaRef.Name}
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("novacompute-controller").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers()}).
		// Status-only updates are the controller's own writes.
		For(&novav1alpha1.NovaCompute{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&batchv1.Job{}).
		Watches(&novav1alpha1.Nova{}, handler.EnqueueRequestsFromMapFunc(r.poolsOfNova), builder.WithPredicates(novaChange{})).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(r.poolsOfDiscoveryJob), builder.WithPredicates(discoveryFinished{})).
		Watches(&novav1alpha1.NovaCompute{}, handler.EnqueueRequestsFromMapFunc(r.siblings), builder.WithPredicates(siblingChange{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.poolsReadingContract(ctx, "", o)
		}))
	if r.Registry != nil {
		if err := targetcluster.IndexTargetCluster(ctx, mgr.GetFieldIndexer(), &novav1alpha1.NovaCompute{}); err != nil {
			return err
		}
		daemonSets, err := r.Registry.RemoteChildren(&appsv1.DaemonSet{}, &novav1alpha1.NovaCompute{})
		if err != nil {
			return err
		}
		jobs, err := r.Registry.RemoteChildren(&batchv1.Job{}, &novav1alpha1.NovaCompute{})
		if err != nil {
			return err
		}
		secrets, err := r.Registry.RemoteObjects(&corev1.Secret{}, nil, r.poolsReadingContract)
		if err != nil {
			return err
		}
		nodes, err := r.Registry.RemoteObjects(&corev1.Node{}, nodeMetadataChanged, r.poolsOnCluster)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(daemonSets).WatchesRawSource(jobs).WatchesRawSource(secrets).WatchesRawSource(nodes).
			WatchesRawSource(r.Registry.ClusterChanges(func() client.ObjectList { return &novav1alpha1.NovaComputeList{} }))
	}
	return b.Complete(r)
}

// poolsOfNova enqueues every pool of a Nova.
func (r *Reconciler) poolsOfNova(ctx context.Context, o client.Object) []reconcile.Request {
	return r.pools(ctx, o.GetNamespace(), o.GetName(), nil)
}

// poolsOfDiscoveryJob enqueues every pool of the Nova whose discovery Job
// on the management cluster finished. A pool waiting for its hosts to be
// mapped would otherwise see the result only at its next poll, up to
// shortRequeue later. A Nova on a compute cluster is still polled.
func (r *Reconciler) poolsOfDiscoveryJob(ctx context.Context, o client.Object) []reconcile.Request {
	owner := metav1.GetControllerOf(o)
	if owner == nil || owner.Kind != "Nova" || owner.APIVersion != novav1alpha1.GroupVersion.String() || o.GetName() != DiscoverJobName(owner.Name) {
		return nil
	}
	return r.pools(ctx, o.GetNamespace(), owner.Name, nil)
}

// novaChange passes a Nova's updates only when something its pools read
// changed: its spec but for the fields that reach a pool only through the
// contract (specPoolsRead), its metadata (the ControlPlane that owns it),
// the start of its deletion, and the three status fields a pass takes
// from it. The rest of its status, conditions above all, moves many times
// while it installs or rolls, and each move would start a pass of every
// pool.
type novaChange struct{ predicate.Funcs }

// Update passes the changes a pool reads.
func (novaChange) Update(e event.UpdateEvent) bool {
	a, okA := e.ObjectOld.(*novav1alpha1.Nova)
	b, okB := e.ObjectNew.(*novav1alpha1.Nova)
	if !okA || !okB {
		return true
	}
	specChanged := a.Generation != b.Generation && !equality.Semantic.DeepEqual(specPoolsRead(a), specPoolsRead(b))
	return specChanged || a.DeletionTimestamp.IsZero() != b.DeletionTimestamp.IsZero() ||
		!maps.Equal(a.Labels, b.Labels) || !maps.Equal(annotationsPoolsRead(a), annotationsPoolsRead(b)) ||
		!equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) ||
		a.Status.InstalledRelease != b.Status.InstalledRelease ||
		!equality.Semantic.DeepEqual(a.Status.ComputeConfigSecretRef, b.Status.ComputeConfigSecretRef) ||
		!equality.Semantic.DeepEqual(a.Status.ManageConfigSecretRef, b.Status.ManageConfigSecretRef)
}

// specPoolsRead is a Nova's spec without the fields no pool pass reads:
// the messaging, endpoints, console proxy and logging settings reach a
// pool as a new contract, whose Secret wakes it then, and the metadata
// API and the replicas concern the control plane alone. Waking every pool
// on such a change as well would run each pass twice, the first time
// beside the ControlPlane's delivery of the new contract and with nothing
// new to read. A field not cleared here wakes the pools, so a field added
// to the spec is read by them until it is listed.
func specPoolsRead(n *novav1alpha1.Nova) novav1alpha1.NovaSpec {
	s := *n.Spec.DeepCopy()
	s.Messaging, s.Endpoints, s.Metadata = novav1alpha1.MessagingSpec{}, novav1alpha1.EndpointsSpec{}, novav1alpha1.MetadataSpec{}
	s.ConsoleProxy, s.Logging, s.Replicas = nil, novav1alpha1.LoggingSpec{}, nil
	return s
}

// annotationsPoolsRead is a Nova's annotations without the digest the
// ControlPlane's apply writes (childwriter.AppliedHashAnnotation): it
// changes with the projected spec, whose changes specPoolsRead already
// weighs.
func annotationsPoolsRead(n *novav1alpha1.Nova) map[string]string {
	if _, ok := n.Annotations[childwriter.AppliedHashAnnotation]; !ok {
		return n.Annotations
	}
	out := maps.Clone(n.Annotations)
	delete(out, childwriter.AppliedHashAnnotation)
	return out
}

// discoveryFinished passes a Job's update only when it finishes: its other
// changes tell a waiting pool nothing, and its creation and deletion are
// the pools' own doing.
type discoveryFinished struct{ predicate.Funcs }

// Create passes nothing.
func (discoveryFinished) Create(event.CreateEvent) bool { return false }

// Delete passes nothing.
func (discoveryFinished) Delete(event.DeleteEvent) bool { return false }

// Generic passes nothing.
func (discoveryFinished) Generic(event.GenericEvent) bool { return false }

// Update passes a Job that was running and is now done.
func (discoveryFinished) Update(e event.UpdateEvent) bool {
	a, okA := e.ObjectOld.(*batchv1.Job)
	b, okB := e.ObjectNew.(*batchv1.Job)
	if !okA || !okB {
		return false
	}
	wasDone, _, _ := workload.JobFinished(a)
	done, _, _ := workload.JobFinished(b)
	return done && !wasDone
}

// siblings enqueues the other pools of the same Nova, which may now win or
// lose a node, or need an aggregate less.
func (r *Reconciler) siblings(ctx context.Context, o client.Object) []reconcile.Request {
	pool := o.(*novav1alpha1.NovaCompute)
	return r.pools(ctx, pool.Namespace, pool.Spec.NovaRef.Name, func(p *novav1alpha1.NovaCompute) bool { return p.UID != pool.UID })
}

// poolsReadingContract enqueues the pools on cluster ("" for the management
// cluster) that read a Secret named {nova}-compute-config.
func (r *Reconciler) poolsReadingContract(ctx context.Context, cluster string, o client.Object) []reconcile.Request {
	name := o.GetName()
	const suffix = novav1alpha1.ComputeConfigSuffix
	if len(name) <= len(suffix) || name[len(name)-len(suffix):] != suffix {
		return nil
	}
	return r.pools(ctx, o.GetNamespace(), name[:len(name)-len(suffix)], func(p *novav1alpha1.NovaCompute) bool {
		return p.TargetClusterName() == cluster
	})
}

// nodeMetadataChanged passes a Node update only when its labels or the
// custom-traits annotation changed, which is all a pool reads of it. The
// status heartbeats of every node, and annotations some kubelets rewrite
// with each heartbeat, would otherwise queue every pool each time.
func nodeMetadataChanged(old, updated client.Object) bool {
	oldTraits, hadTraits := old.GetAnnotations()[novav1alpha1.CustomTraitsAnnotation]
	newTraits, hasTraits := updated.GetAnnotations()[novav1alpha1.CustomTraitsAnnotation]
	return !maps.Equal(old.GetLabels(), updated.GetLabels()) || hadTraits != hasTraits || oldTraits != newTraits
}

// poolsOnCluster enqueues every pool placed on a compute cluster when one
// of its Nodes is added, removed or relabelled; a local pool sees
// relabelled nodes on its next periodic pass.
func (r *Reconciler) poolsOnCluster(ctx context.Context, cluster string, _ client.Object) []reconcile.Request {
	list := &novav1alpha1.NovaComputeList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{targetcluster.TargetClusterIndex: cluster}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return out
}

// pools lists the pools of a Nova that keep passes.
func (r *Reconciler) pools(ctx context.Context, namespace, nova string, keep func(*novav1alpha1.NovaCompute) bool) []reconcile.Request {
	list := &novav1alpha1.NovaComputeList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{NovaRefIndex: nova}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// siblingChange passes a pool's spec changes, the start of its deletion,
// and changes of the nodes it holds, which its siblings decide on. A node
// going from Pending to Active is no such change: siblings treat both as a
// node the pool runs (its claim and its zone's aggregate), and passing it
// would wake every pool of the Nova each time one pool's nodes are mapped,
// hundreds of passes while a large cloud onboards.
type siblingChange struct{ predicate.Funcs }

// Update passes the changes siblings care about.
func (siblingChange) Update(e event.UpdateEvent) bool {
	a, okA := e.ObjectOld.(*novav1alpha1.NovaCompute)
	b, okB := e.ObjectNew.(*novav1alpha1.NovaCompute)
	if !okA || !okB {
		return false
	}
	if a.Generation != b.Generation || a.DeletionTimestamp.IsZero() != b.DeletionTimestamp.IsZero() || len(a.Status.Nodes) != len(b.Status.Nodes) {
		return true
	}
	for i := range a.Status.Nodes {
		x, y := a.Status.Nodes[i], b.Status.Nodes[i]
		if x.Name != y.Name || siblingPhase(x.Phase) != siblingPhase(y.Phase) || x.Zone != y.Zone {
			return true
		}
	}
	return false
}

// siblingPhase is a node's phase as the pool's siblings read it: Pending
// and Active are one, a node the pool runs.
func siblingPhase(phase string) string {
	if phase == novav1alpha1.NodePending {
		return novav1alpha1.NodeActive
	}
	return phase
}
