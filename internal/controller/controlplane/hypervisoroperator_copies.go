package controlplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
)

// The hypervisor operator's account is a cloud admin, and root on any node
// of a compute cluster can read a Secret placed there. So the copy goes
// only where the compute cluster's owner asked for it, with a label on the
// Nova's namespace there, and leaves again when the label does.

// OptsInToAuthCopy tells whether a compute cluster's namespace, by its
// labels, asks for the copy of the hypervisor operator's auth Secret.
func OptsInToAuthCopy(labels map[string]string) bool {
	return labels[c5c3v1alpha1.HypervisorOperatorCredentialsLabel] == "true"
}

// markAuthCopies reads each delivery's namespace on its cluster and marks
// the deliveries that carry the auth Secret; it returns the clusters that
// withhold it, in the deliveries' order.
func (r *Reconciler) markAuthCopies(ctx context.Context, namespace string, ready []delivery) []string {
	var withheld []string
	for i := range ready {
		ready[i].auth = r.authOptIn(ctx, ready[i].cluster, namespace)
		if !ready[i].auth {
			withheld = append(withheld, ready[i].cluster)
		}
	}
	return withheld
}

// authOptIn reads the namespace's labels on the cluster from the cluster's
// cache, which watches Namespaces' metadata. A namespace that does not
// exist asks for nothing. So does a cluster that cannot be read; its
// delivery, which needs the same cluster, reports why.
func (r *Reconciler) authOptIn(ctx context.Context, cluster, namespace string) bool {
	remote, err := r.Registry.Resolve(cluster)
	if err != nil {
		return false
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := remote.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return false
	}
	return OptsInToAuthCopy(ns.GetLabels())
}
