package poolpolicy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// CheckNamespace refuses a pool whose namespace has not opted in to
// privileged pools. The right to create a NovaCompute is often granted
// with a namespace's other objects, while a pool is node root on every
// node it selects; the label is the cluster administrator's separate
// grant, and namespace labels are theirs to write. The operator reads the
// Namespace itself instead of trusting Pod Security admission, whose
// absence lets privileged pods in.
func CheckNamespace(ns *corev1.Namespace) *field.Error {
	if ns.Labels[novav1alpha1.PrivilegedPoolsLabel] == "true" {
		return nil
	}
	return field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf(
		"namespace %s does not allow privileged pools: a pool runs privileged and hostNetwork on every node it selects, so a cluster administrator opts a namespace in with the label %s=true",
		ns.Name, novav1alpha1.PrivilegedPoolsLabel))
}
