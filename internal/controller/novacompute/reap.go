package novacompute

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
)

// hypervisorOperatorAuthSuffix names the hypervisor operator's auth Secret
// the ControlPlane delivers beside the contract.
const hypervisorOperatorAuthSuffix = "-hypervisor-operator-auth"

// MirrorNames are the delivered copies a Nova's last pool on a cluster
// reaps: the contract and the hypervisor operator's auth Secret.
func MirrorNames(novaName string) []string {
	return []string{novaName + novav1alpha1.ComputeConfigSuffix, novaName + hypervisorOperatorAuthSuffix}
}

// stillServes tells whether another pool keeps the copies on pool's
// cluster: a pool of the same Nova there that is live or still drains.
func stillServes(pool *novav1alpha1.NovaCompute, others []novav1alpha1.NovaCompute) bool {
	for i := range others {
		o := &others[i]
		if o.Name == pool.Name || o.Namespace != pool.Namespace || o.Spec.NovaRef.Name != pool.Spec.NovaRef.Name ||
			o.TargetClusterName() != pool.TargetClusterName() {
			continue
		}
		if o.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(o, novav1alpha1.ComputeDrainFinalizer) {
			return true
		}
	}
	return false
}

// DeliveredBy tells whether labels mark a Secret in namespace as a copy
// that the ControlPlane projecting novaName delivered: the mirror label,
// and the ownership labels naming that ControlPlane. The mirror label
// alone is not enough, since anyone who may label a Secret could then have
// the operator delete it. A standalone Nova has no ControlPlane, so
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

// ReapComputeConfigMirrors runs at the end of a pool's teardown. If no
// other pool of the same Nova still serves the pool's cluster, it deletes
// the delivered copies there, each only if DeliveredBy accepts it, and
// records one Normal ComputeConfigMirrorReaped per deletion. Secrets
// without those labels, such as copies made by hand, are never deleted. mgmt lists the
// pools; cluster is the pool's cluster, whose Reader should bypass the
// cache, so that a stale cache cannot hide a label.
func ReapComputeConfigMirrors(ctx context.Context, mgmt client.Reader, cluster *childwriter.Writer, recorder events.EventRecorder, pool *novav1alpha1.NovaCompute) ([]string, error) {
	pools := &novav1alpha1.NovaComputeList{}
	if err := mgmt.List(ctx, pools, client.InNamespace(pool.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the pools of Nova %s: %w", pool.Spec.NovaRef.Name, err)
	}
	if stillServes(pool, pools.Items) {
		return nil, nil
	}
	mirrored := func(live client.Object) bool {
		return DeliveredBy(live.GetLabels(), pool.Namespace, pool.Spec.NovaRef.Name)
	}
	var reaped []string
	for _, name := range MirrorNames(pool.Spec.NovaRef.Name) {
		deleted, err := cluster.DeleteIf(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: name}}, mirrored)
		if err != nil {
			return reaped, err
		}
		if !deleted {
			continue
		}
		reaped = append(reaped, name)
		// The Secret is the related object, so that the two reaps of one
		// teardown stay two events instead of one series.
		recorder.Eventf(pool, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: pool.Namespace, Name: name},
			corev1.EventTypeNormal, novav1alpha1.ComputeConfigMirrorReapedEvent, "Delete",
			"Deleted the delivered copy %s/%s: no other pool of Nova %s uses this cluster", pool.Namespace, name, pool.Spec.NovaRef.Name)
	}
	return reaped, nil
}
