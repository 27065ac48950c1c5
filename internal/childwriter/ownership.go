package childwriter

import (
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Ownership labels of a remote child. An ownerReference cannot point across
// clusters, so these three labels say who owns an object on a compute
// cluster.
const (
	OwnerKindLabel      = "openstack.c5c3.io/owner-kind"
	OwnerNameLabel      = "openstack.c5c3.io/owner-name"
	OwnerNamespaceLabel = "openstack.c5c3.io/owner-namespace"
)

// ManagementClusterLabel names the management cluster whose Anvil wrote a
// remote child. Two management clusters (say staging and production) may
// register the same compute-cluster namespace and hold owners of the same
// kind, namespace and name; the three owner labels alone would then make
// each one's children the other's to overwrite and delete.
const ManagementClusterLabel = "openstack.c5c3.io/management-cluster"

// managementCluster is this operator's management-cluster identity, the
// value of ManagementClusterLabel on what it writes; empty until
// SetManagementCluster.
var managementCluster atomic.Pointer[string]

// SetManagementCluster records this operator's management-cluster
// identity. The operator sets it once, before any controller starts.
func SetManagementCluster(id string) { managementCluster.Store(&id) }

// ManagementCluster returns the identity SetManagementCluster recorded, or
// "" when none was.
func ManagementCluster() string {
	if id := managementCluster.Load(); id != nil {
		return *id
	}
	return ""
}

// maxOwnerNameLength is the longest owner name a label value can hold.
const maxOwnerNameLength = 63

// NotOwnedError is returned when an object exists under the name a child
// needs but its owner does not control it. Anvil never takes it over.
type NotOwnedError struct {
	Kind, Namespace, Name string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s/%s exists and is not owned by Anvil; it is left untouched", e.Kind, e.Namespace, e.Name)
}

// OwnerLabels returns the ownership labels that mark a remote child of
// owner.
func OwnerLabels(owner client.Object, scheme *runtime.Scheme) (map[string]string, error) {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		OwnerKindLabel:      gvk.Kind,
		OwnerNameLabel:      owner.GetName(),
		OwnerNamespaceLabel: owner.GetNamespace(),
	}, nil
}

// OwnerKeyFromLabels reads the owner a child's labels name, if they name one
// of ownerKind in the child's own namespace.
func OwnerKeyFromLabels(labels map[string]string, ownerKind, childNamespace string) (types.NamespacedName, bool) {
	if labels[OwnerKindLabel] != ownerKind {
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: labels[OwnerNamespaceLabel], Name: labels[OwnerNameLabel]}
	if key.Name == "" || key.Namespace == "" || key.Namespace != childNamespace {
		return types.NamespacedName{}, false
	}
	return key, true
}

// Controls tells whether owner controls obj: obj carries a controller
// reference to owner, or all three ownership labels name it; and obj names
// no other management cluster. An object without ManagementClusterLabel
// was written before the label existed, and is still its owner's.
func Controls(owner, obj client.Object, scheme *runtime.Scheme) bool {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return false
	}
	if id, ok := obj.GetLabels()[ManagementClusterLabel]; ok && id != ManagementCluster() {
		return false
	}
	if ref := metav1.GetControllerOf(obj); ref != nil && refersTo(*ref, gvk, owner.GetName()) {
		return true
	}
	l := obj.GetLabels()
	return l[OwnerKindLabel] == gvk.Kind && l[OwnerNameLabel] == owner.GetName() && l[OwnerNamespaceLabel] == owner.GetNamespace()
}

// refersTo compares by group, kind and name rather than UID: a reference
// written on another cluster carries a UID this cluster never issued.
func refersTo(ref metav1.OwnerReference, gvk schema.GroupVersionKind, name string) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gvk.Group && ref.Kind == gvk.Kind && ref.Name == name
}

// ClaimRemote prepares obj, the desired state of a remote child, for a
// write. live is the object as it exists on the compute cluster, or nil. It
// refuses an owner whose name cannot be a label value and a live object
// owner does not control. It merges the ownership labels into obj's
// top-level labels and drops a controller reference to owner, which cannot
// resolve across clusters.
func ClaimRemote(owner, obj, live client.Object, scheme *runtime.Scheme) error {
	if len(owner.GetName()) > maxOwnerNameLength {
		return fmt.Errorf("owner name %q is longer than %d characters and cannot be recorded in a label", owner.GetName(), maxOwnerNameLength)
	}
	if live != nil && !Controls(owner, live, scheme) {
		gvk, _ := apiutil.GVKForObject(live, scheme)
		return &NotOwnedError{Kind: gvk.Kind, Namespace: live.GetNamespace(), Name: live.GetName()}
	}
	labels, err := OwnerLabels(owner, scheme)
	if err != nil {
		return err
	}
	merged := obj.GetLabels()
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range labels {
		merged[k] = v
	}
	if id := ManagementCluster(); id != "" {
		merged[ManagementClusterLabel] = id
	}
	obj.SetLabels(merged)
	gvk, _ := apiutil.GVKForObject(owner, scheme)
	refs := obj.GetOwnerReferences()[:0]
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller == nil || !*ref.Controller || !refersTo(ref, gvk, owner.GetName()) {
			refs = append(refs, ref)
		}
	}
	obj.SetOwnerReferences(refs)
	return nil
}

// ClaimLocal prepares obj, a child on the management cluster, for a write:
// it refuses a live object owner does not control and sets the controller
// reference.
func ClaimLocal(owner, obj, live client.Object, scheme *runtime.Scheme) error {
	if live != nil && !Controls(owner, live, scheme) {
		gvk, _ := apiutil.GVKForObject(live, scheme)
		return &NotOwnedError{Kind: gvk.Kind, Namespace: live.GetNamespace(), Name: live.GetName()}
	}
	return controllerutil.SetControllerReference(owner, obj, scheme)
}
