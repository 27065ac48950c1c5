package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/childwriter"
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

// withdrawAuthCopy deletes this ControlPlane's copy of the auth Secret on
// a cluster whose namespace does not ask for it, and records an event when
// it deleted one. The cluster's cache is asked first, so a pass that finds
// nothing to withdraw sends no request.
func (r *Reconciler) withdrawAuthCopy(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string) *clusterResult {
	children, err := r.Registry.WriterFor(cluster, nil)
	if err != nil {
		return &clusterResult{cluster, anvilmeta.TargetClusterUnavailableReason, err.Error()}
	}
	name := HypervisorOperatorAuthName(cp)
	cached := &metav1.PartialObjectMetadata{}
	cached.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := children.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: name}, cached); apierrors.IsNotFound(err) ||
		(err == nil && !childwriter.Controls(cp, cached, r.Scheme)) {
		return nil
	}
	deleted, res := r.deleteAuthCopy(ctx, cp, cluster, children)
	if res != nil {
		return res
	}
	if deleted {
		r.Recorder.Eventf(cp, nil, corev1.EventTypeNormal, c5c3v1alpha1.HypervisorOperatorCopyWithdrawnEvent, "Delete",
			"deleted Secret %s/%s on %s: namespace %s there does not carry %s=true",
			cp.Namespace, name, cluster, cp.Namespace, c5c3v1alpha1.HypervisorOperatorCredentialsLabel)
	}
	return nil
}

// deleteAuthCopy deletes the auth Secret's copy on one cluster if this
// ControlPlane owns it and it carries the mirror label; a copy someone else
// made is never touched. It tells whether it deleted one.
func (r *Reconciler) deleteAuthCopy(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string, children *childwriter.Writer) (bool, *clusterResult) {
	name := HypervisorOperatorAuthName(cp)
	deleted, err := r.deleteCopy(ctx, cp, children, deliveredCopy{name, c5c3v1alpha1.ComputeConfigMirrorLabel})
	if err != nil {
		return false, &clusterResult{cluster, c5c3v1alpha1.HypervisorOperatorErrorReason,
			fmt.Sprintf("on %s: deleting Secret %s/%s: %s", cluster, cp.Namespace, name, err.Error())}
	}
	return deleted, nil
}
