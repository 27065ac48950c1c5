package neutronmetadataagent

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

// isMirror tells whether a Secret is the ControlPlane's copy of the shared
// secret. Only the label's exact value "true" counts: an agent deletes
// nothing else.
func isMirror(labels map[string]string) bool {
	return labels[neutronv1alpha1.MetadataSharedSecretMirrorLabel] == "true"
}

// MirrorsToReap decides which copies of the shared secret a deleting agent
// removes from its cluster (spec §4.4): of mirrors, the labelled Secrets in
// the agent's namespace there, every one that no other agent still names
// in spec.novaMetadata.sharedSecretRef.name. Another agent counts when it
// is not this one, is not being deleted itself, and lives in the same
// namespace on the same cluster; agents elsewhere read copies of their own.
// The names come back sorted. It is pure.
//
// The sweep alone would never remove a copy, since the ControlPlane owns
// it; and the ControlPlane never deletes one, since it cannot tell when
// the last reader went. The last reader can.
func MirrorsToReap(agent *neutronv1alpha1.NeutronMetadataAgent, mirrors []corev1.Secret, agents []neutronv1alpha1.NeutronMetadataAgent) []string {
	inUse := map[string]bool{}
	for i := range agents {
		o := &agents[i]
		if o.Name == agent.Name || o.Namespace != agent.Namespace || !o.DeletionTimestamp.IsZero() ||
			o.TargetClusterName() != agent.TargetClusterName() {
			continue
		}
		if ref := o.Spec.NovaMetadata.SharedSecretRef; ref != nil {
			inUse[ref.Name] = true
		}
	}
	var reap []string
	for i := range mirrors {
		m := &mirrors[i]
		if m.Namespace == agent.Namespace && isMirror(m.Labels) && !inUse[m.Name] {
			reap = append(reap, m.Name)
		}
	}
	sort.Strings(reap)
	return reap
}
