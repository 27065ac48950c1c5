package targetcluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/anvil/anvil/internal/childwriter"
)

// Targeted is an object whose children go to the compute cluster it names.
type Targeted interface {
	client.Object
	// TargetClusterName is the name from spec.targetClusterRef, or "" for
	// an object whose children stay on the management cluster.
	TargetClusterName() string
}

// TargetClusterIndex is the field index, on the management cluster's cache,
// from an object to the name of its target cluster.
const TargetClusterIndex = "spec.targetClusterRef.name"

// IndexTargetCluster registers TargetClusterIndex for obj's kind. Call it
// once per kind before ClusterChanges is used for that kind.
func IndexTargetCluster(ctx context.Context, indexer client.FieldIndexer, obj Targeted) error {
	return indexer.IndexField(ctx, obj, TargetClusterIndex, func(o client.Object) []string {
		if t, ok := o.(Targeted); ok && t.TargetClusterName() != "" {
			return []string{t.TargetClusterName()}
		}
		return nil
	})
}

// queue is the workqueue type controllers hand to sources.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// remoteWatch is one controller's interest in one child kind on every
// engaged compute cluster.
type remoteWatch struct {
	// childGVK is the kind watched, through a metadata-only informer.
	childGVK  schema.GroupVersionKind
	ownerKind string
	newOwner  func() client.Object
	// fromCluster tells whether an event on the named cluster counts for
	// the owner; nil accepts every cluster.
	fromCluster func(owner client.Object, cluster string) bool
	// mapper, when set, replaces the ownership-label mapping: it returns
	// the requests an object seen on a cluster stands for.
	mapper func(ctx context.Context, cluster string, obj client.Object) []reconcile.Request
	// changed, when set, filters updates: only those it accepts are
	// mapped. Adds and deletes always are.
	changed func(old, updated client.Object) bool
	queue   queue
}

// subscriber is one controller's interest in cluster changes.
type subscriber struct {
	newList func() client.ObjectList
	// all enqueues every object of the list, not only those that name the
	// cluster.
	all   bool
	queue queue
}

// sourceFunc adapts a function to source.Source.
type sourceFunc func(context.Context, queue) error

func (f sourceFunc) Start(ctx context.Context, q queue) error { return f(ctx, q) }

// RemoteChildren returns a source for a controller of owner's kind. It
// enqueues the owner of every object of child's kind on every engaged
// compute cluster, now or later, found through the ownership labels. An
// event counts only when the owner, read from the management cluster, names
// the cluster the event came from; the same object on another cluster is
// someone else's.
func (r *Registry) RemoteChildren(child client.Object, owner Targeted) (source.Source, error) {
	childGVK, err := apiutil.GVKForObject(child, r.opts.Scheme)
	if err != nil {
		return nil, err
	}
	ownerGVK, err := apiutil.GVKForObject(owner, r.opts.Scheme)
	if err != nil {
		return nil, err
	}
	names := func(o client.Object, cluster string) bool { return o.(Targeted).TargetClusterName() == cluster }
	return r.remoteSource(childGVK, owner, ownerGVK.Kind, names), nil
}

// RemoteChildrenFromAnyCluster is RemoteChildren for an owner whose
// children span several clusters, such as a ControlPlane's mirrors: an
// event on any engaged cluster enqueues the owner its labels name.
func (r *Registry) RemoteChildrenFromAnyCluster(child, owner client.Object) (source.Source, error) {
	childGVK, err := apiutil.GVKForObject(child, r.opts.Scheme)
	if err != nil {
		return nil, err
	}
	ownerGVK, err := apiutil.GVKForObject(owner, r.opts.Scheme)
	if err != nil {
		return nil, err
	}
	return r.remoteSource(childGVK, owner, ownerGVK.Kind, nil), nil
}

// RemoteObjects returns a source that hands every object of obj's kind on
// every engaged compute cluster, now or later, to mapFn, and enqueues the
// requests it returns. It is for inputs a controller reads on a compute
// cluster without owning them, such as Nodes or a delivered Secret.
// mapFn and changed see a *metav1.PartialObjectMetadata: the remote cache
// keeps metadata only, so they may read names, labels and annotations, and
// nothing else. changed, when not nil, keeps updates that do not matter to the
// controller, such as a Node's status heartbeat, from being mapped. mapFn
// gets the registry's context, which ends when the operator stops.
func (r *Registry) RemoteObjects(obj client.Object, changed func(old, updated client.Object) bool,
	mapFn func(ctx context.Context, cluster string, obj client.Object) []reconcile.Request) (source.Source, error) {
	gvk, err := apiutil.GVKForObject(obj, r.opts.Scheme)
	if err != nil {
		return nil, err
	}
	return r.watchSource(&remoteWatch{childGVK: gvk, mapper: mapFn, changed: changed}), nil
}

func (r *Registry) remoteSource(childGVK schema.GroupVersionKind, owner client.Object, ownerKind string,
	fromCluster func(client.Object, string) bool) source.Source {
	newOwner := func() client.Object { return owner.DeepCopyObject().(client.Object) }
	return r.watchSource(&remoteWatch{childGVK: childGVK, ownerKind: ownerKind, newOwner: newOwner, fromCluster: fromCluster})
}

// watchSource registers a remote watch when its controller starts.
func (r *Registry) watchSource(proto *remoteWatch) source.Source {
	childGVK := proto.childGVK
	return sourceFunc(func(_ context.Context, q queue) error {
		w := *proto
		w.queue = q
		r.mu.Lock()
		r.watches = append(r.watches, &w)
		engaged := make([]*engagement, 0, len(r.clusters))
		for _, e := range r.clusters {
			engaged = append(engaged, e)
		}
		r.mu.Unlock()
		// Clusters engaged before this controller started get the watch now;
		// later ones get it during engagement.
		for _, e := range engaged {
			ctx, cancel := context.WithTimeout(r.rootCtx, r.opts.SyncTimeout)
			if err := r.attach(ctx, e, &w); err != nil {
				r.log.Info("cannot watch children on the cluster yet", "cluster", e.name, "kind", childGVK.Kind, "error", err.Error())
			}
			cancel()
		}
		return nil
	})
}

// ClusterChanges returns a source that, whenever a compute cluster is
// engaged, disengaged, or becomes unreachable or reachable again, enqueues
// every object of newList's kind that names it. The kind must be indexed
// with IndexTargetCluster.
func (r *Registry) ClusterChanges(newList func() client.ObjectList) source.Source {
	return sourceFunc(func(_ context.Context, q queue) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.subscribers = append(r.subscribers, &subscriber{newList: newList, queue: q})
		return nil
	})
}

// AnyClusterChanges returns a source that enqueues every object of
// newList's kind whenever any compute cluster is engaged, disengaged, lost
// or regained: for kinds whose objects reach clusters they do not name.
func (r *Registry) AnyClusterChanges(newList func() client.ObjectList) source.Source {
	return sourceFunc(func(_ context.Context, q queue) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.subscribers = append(r.subscribers, &subscriber{newList: newList, all: true, queue: q})
		return nil
	})
}

// attach adds w's handler to e's informer for the child kind. A cluster that
// does not serve the kind is skipped: it cannot hold such children.
func (r *Registry) attach(ctx context.Context, e *engagement, w *remoteWatch) error {
	if _, err := e.cluster.GetRESTMapper().RESTMapping(w.childGVK.GroupKind(), w.childGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			r.log.V(1).Info("the cluster does not serve the kind; not watching it", "cluster", e.name, "kind", w.childGVK.Kind)
			return nil
		}
		return fmt.Errorf("discovering %s: %s", w.childGVK.Kind, sanitize(err))
	}
	inf, err := e.cluster.GetCache().GetInformer(ctx, metadataOnly(w.childGVK))
	if err != nil {
		return fmt.Errorf("watching %s: %s", w.childGVK.Kind, sanitize(err))
	}
	handle := func(obj any) { r.mapChild(e.name, w, obj) }
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: handle,
		UpdateFunc: func(old, obj any) {
			if w.changed != nil {
				o, okOld := old.(client.Object)
				n, okNew := obj.(client.Object)
				if okOld && okNew && !w.changed(o, n) {
					return
				}
			}
			handle(obj)
		},
		DeleteFunc: handle,
	})
	return err
}

// mapChild enqueues the owner of a child seen on cluster, if the owner
// exists on the management cluster and names that cluster.
func (r *Registry) mapChild(cluster string, w *remoteWatch, obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if w.mapper != nil {
		if o, ok := obj.(client.Object); ok {
			for _, req := range w.mapper(r.rootCtx, cluster, o) {
				w.queue.Add(req)
			}
		}
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key, ok := childwriter.OwnerKeyFromLabels(m.GetLabels(), w.ownerKind, m.GetNamespace())
	if !ok {
		return
	}
	owner := w.newOwner()
	if err := r.mgmt.Get(r.rootCtx, key, owner); err != nil {
		return
	}
	if w.fromCluster != nil && !w.fromCluster(owner, cluster) {
		return
	}
	w.queue.Add(reconcile.Request{NamespacedName: key})
}

// notify enqueues every object that names cluster, for each subscriber.
func (r *Registry) notify(cluster string) {
	r.mu.RLock()
	subs := append([]*subscriber(nil), r.subscribers...)
	r.mu.RUnlock()
	for _, s := range subs {
		list := s.newList()
		var opts []client.ListOption
		if !s.all {
			opts = append(opts, client.MatchingFields{TargetClusterIndex: cluster})
		}
		if err := r.mgmt.List(r.rootCtx, list, opts...); err != nil {
			r.log.Error(err, "cannot list the objects that name a cluster", "cluster", cluster)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			continue
		}
		for _, item := range items {
			if o, ok := item.(client.Object); ok {
				s.queue.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
	}
}
