package workloadpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// CheckNamespace refuses a privileged workload whose namespace has not
// opted in. The right to create a NovaCompute, an OVNChassis or a
// NeutronMetadataAgent is often granted with a namespace's other objects,
// while each of them is node root on every node it selects; the label is
// the cluster administrator's separate grant, and namespace labels are
// theirs to write. The operator reads the Namespace itself instead of
// trusting Pod Security admission, whose absence lets privileged pods in.
func CheckNamespace(ns *corev1.Namespace) *field.Error {
	if ns.Labels[anvilmeta.PrivilegedNamespaceLabel] == "true" {
		return nil
	}
	return field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf(
		"namespace %s does not allow privileged pools, chassis or metadata agents: each runs privileged and hostNetwork on every node it selects, so a cluster administrator opts a namespace in with the label %s=true",
		ns.Name, anvilmeta.PrivilegedNamespaceLabel))
}

// anyCachedVersion lets the apiserver answer from its watch cache rather
// than from etcd: as fresh as an informer's answer, and cheap on every pass
// while a rollout keeps etcd busy.
var anyCachedVersion = &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}}

// ReadOptIn reads the Namespace name for a controller, past its cache
// (the operator caches no Namespaces) but from the apiserver's watch
// cache, and returns CheckNamespace's refusal, or an error naming the
// namespace and the label when it cannot be read. Controllers check again
// on a timer, so the watch cache's lag costs nothing; admission reads the
// Namespace itself, so that a label just set counts at once.
func ReadOptIn(ctx context.Context, r client.Reader, name string) (*field.Error, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, ns, anyCachedVersion); err != nil {
		return nil, fmt.Errorf("reading namespace %s for its %s label: %w", name, anvilmeta.PrivilegedNamespaceLabel, err)
	}
	return CheckNamespace(ns), nil
}
