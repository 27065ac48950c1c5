package novacompute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

const (
	// DrainFinalizer holds a pool while it still drains nodes.
	DrainFinalizer = novav1alpha1.ComputeDrainFinalizer
	// ReasonComputeConfigMirrorReaped is the Normal event recorded on the
	// pool for each delivered copy it deletes.
	ReasonComputeConfigMirrorReaped = novav1alpha1.ComputeConfigMirrorReapedEvent
	// hypervisorOperatorAuthSuffix names the hypervisor operator's auth
	// Secret the ControlPlane delivers beside the contract.
	hypervisorOperatorAuthSuffix = "-hypervisor-operator-auth"
)

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
		if o.DeletionTimestamp.IsZero() || hasFinalizer(o, DrainFinalizer) {
			return true
		}
	}
	return false
}

func hasFinalizer(o *novav1alpha1.NovaCompute, f string) bool {
	for _, x := range o.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// ReapComputeConfigMirrors runs at the end of a pool's teardown. If no
// other pool of the same Nova still serves the pool's cluster, it deletes
// the delivered copies there, each only if it carries the mirror label, and
// records one Normal ComputeConfigMirrorReaped per deletion. Unlabelled
// Secrets, such as copies made by hand, are never deleted. mgmt lists the
// pools; cluster reads and deletes on the pool's cluster, directly rather
// than through a cache, so a stale cache cannot hide a label.
func ReapComputeConfigMirrors(ctx context.Context, mgmt client.Reader, cluster client.Client, recorder events.EventRecorder, pool *novav1alpha1.NovaCompute) ([]string, error) {
	pools := &novav1alpha1.NovaComputeList{}
	if err := mgmt.List(ctx, pools, client.InNamespace(pool.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the pools of Nova %s: %w", pool.Spec.NovaRef.Name, err)
	}
	if stillServes(pool, pools.Items) {
		return nil, nil
	}
	var reaped []string
	for _, name := range MirrorNames(pool.Spec.NovaRef.Name) {
		s := &corev1.Secret{}
		if err := cluster.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: name}, s); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return reaped, err
		}
		if s.Labels[c5c3v1alpha1.ComputeConfigMirrorLabel] != "true" {
			continue
		}
		if err := cluster.Delete(ctx, s, client.Preconditions{UID: &s.UID}); client.IgnoreNotFound(err) != nil {
			return reaped, err
		}
		reaped = append(reaped, name)
		// The Secret is the related object, so that the two reaps of one
		// teardown stay two events instead of one series.
		recorder.Eventf(pool, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: pool.Namespace, Name: name},
			corev1.EventTypeNormal, ReasonComputeConfigMirrorReaped, "Delete",
			"Deleted the delivered copy %s/%s: no other pool of Nova %s uses this cluster", pool.Namespace, name, pool.Spec.NovaRef.Name)
	}
	return reaped, nil
}
