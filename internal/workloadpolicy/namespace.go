package workloadpolicy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
