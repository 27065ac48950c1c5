package novacompute

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
)

// DeliveredBy tells whether labels mark a Secret in namespace as a copy
// that the ControlPlane projecting novaName delivered: the mirror label,
// and the ownership labels naming that ControlPlane. The mirror label
// alone is not enough, since anyone who may label a Secret could then
// plant a contract of their own. A standalone Nova has no ControlPlane, so
// nothing is ever delivered for it. It is pure.
func DeliveredBy(labels map[string]string, namespace, novaName string) bool {
	cp, projected := strings.CutSuffix(novaName, c5c3v1alpha1.NovaSuffix)
	return projected && cp != "" && labels[c5c3v1alpha1.ComputeConfigMirrorLabel] == "true" &&
		labels[childwriter.OwnerKindLabel] == "ControlPlane" && labels[childwriter.OwnerNameLabel] == cp &&
		labels[childwriter.OwnerNamespaceLabel] == namespace
}

// ContractVouchedFor tells whether a pool may mount contract, the Secret of
// the contract's name on the pool's cluster. A pool beside its Nova mounts
// the Nova's own contract, and one of a standalone Nova mounts the copy
// its owner made by hand, as the guide shows. A pool of a Nova that a
// ControlPlane projects (projected, as keystonepolicy.ControlPlaneOf
// verifies it), on another cluster, mounts only the copy that ControlPlane
// delivered: anyone who may create Secrets in the namespace there could
// otherwise plant a contract of their own, and the ControlPlane never
// overwrites a Secret it did not write. It is pure.
func ContractVouchedFor(nova *novav1alpha1.Nova, projected bool, pool *novav1alpha1.NovaCompute, contract *corev1.Secret) bool {
	if !projected || nova.TargetClusterName() == pool.TargetClusterName() {
		return true
	}
	return DeliveredBy(contract.Labels, pool.Namespace, nova.Name)
}
