package targetcluster

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lastAppliedAnnotation is where kubectl apply keeps a full copy of what it
// applied, a Secret's data included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// metadataOnly is the object a remote watch asks its informer for: every
// mapper and filter of a remote watch reads names, labels and annotations
// only, so the compute cluster's apiserver sends metadata and the cache
// never holds a Secret's data, a Node's status or a DaemonSet's spec. A
// compute cluster's users can create such objects at will; what the
// operator keeps of each must stay small.
func metadataOnly(gvk schema.GroupVersionKind) client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// trimForCache is the transform of every compute-cluster cache. It drops
// managedFields, which often outweigh the rest of an object's metadata,
// and kubectl's last-applied annotation, which repeats the whole object
// (for a Secret, its data) inside the metadata the watches keep. Anvil
// reads neither from the cache: ownership and settledness checks read the
// apiserver directly. Anything that is not an object passes unchanged.
func trimForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil //nolint:nilerr // not an object, such as a tombstone: nothing to trim
	}
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[lastAppliedAnnotation]; ok {
			kept := maps.Clone(a)
			delete(kept, lastAppliedAnnotation)
			obj.SetAnnotations(kept)
		}
	}
	return in, nil
}

// cacheOptions builds a compute cluster's cache options: its registration's
// namespaces, when it lists any, and the trimming transform everywhere.
func cacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{DefaultTransform: trimForCache}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{Transform: trimForCache}
		}
	}
	return opts
}
