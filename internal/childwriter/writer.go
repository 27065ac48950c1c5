package childwriter

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writer is where an owner's children live: the management cluster, or a
// compute cluster. Every child is written through Apply and removed
// through Delete, DeleteIf or Sweep, with the ownership mechanics that
// cluster needs, and an object the owner does not control is never
// touched.
type Writer struct {
	// Client writes children.
	Client client.Client
	// Reader reads the live state of children and inputs. Locally it is
	// the cached client, whose watches drive the next pass; on a compute
	// cluster it reads the apiserver directly.
	Reader client.Reader
	// Scheme maps children and owners to their kinds.
	Scheme *runtime.Scheme
	// Cluster names the compute cluster; "" is the management cluster.
	Cluster string
	// Namespaces is the compute cluster's registration scope; empty means
	// cluster-wide.
	Namespaces []string
}

// Local places children on the management cluster.
func Local(c client.Client, scheme *runtime.Scheme) *Writer {
	return &Writer{Client: c, Reader: c, Scheme: scheme}
}

// Remote tells whether the children live on a compute cluster.
func (w *Writer) Remote() bool { return w.Cluster != "" }

// Allows tells whether the registration lets Anvil work in namespace; the
// management cluster allows every namespace.
func (w *Writer) Allows(namespace string) bool {
	return len(w.Namespaces) == 0 || slices.Contains(w.Namespaces, namespace)
}

// Claim marks obj as owner's child the way its cluster needs: a controller
// reference locally, ownership labels remotely.
func (w *Writer) Claim(owner, obj, live client.Object) error {
	if w.Remote() {
		return ClaimRemote(owner, obj, live, w.Scheme)
	}
	return ClaimLocal(owner, obj, live, w.Scheme)
}

// NamespaceNotAllowedError refuses a write to a namespace the cluster's
// registration does not list.
type NamespaceNotAllowedError struct {
	Cluster, Namespace string
}

func (e *NamespaceNotAllowedError) Error() string {
	return fmt.Sprintf("the registration of cluster %s does not list namespace %s", e.Cluster, e.Namespace)
}
