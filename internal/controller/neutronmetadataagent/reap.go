package neutronmetadataagent

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
)

// controlPlaneKind is the kind the ownership labels of a delivered copy name.
const controlPlaneKind = "ControlPlane"

// isDeliveredCopy tells whether a Secret is a copy of the shared secret
// that a ControlPlane delivered: it carries the mirror label with the
// value "true" and the ownership labels of a ControlPlane of its own
// namespace, and has the name that ControlPlane gives its copy. A label
// alone proves nothing: whoever may label a Secret in the namespace could
// otherwise have an agent's teardown delete it.
func isDeliveredCopy(s metav1.Object) bool {
	l := s.GetLabels()
	owner := l[childwriter.OwnerNameLabel]
	return l[neutronv1alpha1.MetadataSharedSecretMirrorLabel] == "true" &&
		l[childwriter.OwnerKindLabel] == controlPlaneKind &&
		l[childwriter.OwnerNamespaceLabel] == s.GetNamespace() &&
		owner != "" && s.GetName() == neutronv1alpha1.MetadataSharedSecretMirrorName(owner)
}

// MirrorsToReap decides which copy of the shared secret a deleting agent
// removes from its cluster (spec §4.4): the one it names in
// spec.novaMetadata.sharedSecretRef, in its namespace there, if that is a
// copy a ControlPlane delivered (isDeliveredCopy) and no other agent still
// names it. Another agent counts when it is not this one, is not being
// deleted itself, and lives in the same namespace on the same cluster;
// agents elsewhere read copies of their own. It returns at most one name.
// It is pure.
//
// The sweep alone would never remove a copy, since the ControlPlane owns
// it; and the ControlPlane never deletes one, since it cannot tell when
// the last reader went. The last reader can.
func MirrorsToReap(agent *neutronv1alpha1.NeutronMetadataAgent, mirrors []corev1.Secret, agents []neutronv1alpha1.NeutronMetadataAgent) []string {
	own := agent.Spec.NovaMetadata.SharedSecretRef
	if own == nil {
		return nil
	}
	for i := range agents {
		o := &agents[i]
		if o.Name == agent.Name || o.Namespace != agent.Namespace || !o.DeletionTimestamp.IsZero() ||
			o.TargetClusterName() != agent.TargetClusterName() {
			continue
		}
		if ref := o.Spec.NovaMetadata.SharedSecretRef; ref != nil && ref.Name == own.Name {
			return nil
		}
	}
	for i := range mirrors {
		m := &mirrors[i]
		if m.Namespace == agent.Namespace && m.Name == own.Name && isDeliveredCopy(m) {
			return []string{m.Name}
		}
	}
	return nil
}
