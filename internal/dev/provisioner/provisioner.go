// Package provisioner gives the clusters of tests and of the devstack
// persistent volumes. Neither has a storage driver: a claim would stay
// Pending, and the scheduler would never place a pod that mounts it, such
// as a member of an OVN central's StatefulSet.
//
// The provisioner installs a default StorageClass and binds every Pending
// claim of that class to a hostPath volume it creates. The pod runner maps
// hostPaths into each node's own directory, so a claim's data lives on the
// node that mounts it, as a local volume would. A released volume is
// deleted, as its reclaim policy says.
package provisioner

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// StorageClassName is the default StorageClass the provisioner serves.
const StorageClassName = "anvil-local"

// Provisioner is this package's name in the StorageClass and on volumes.
const Provisioner = "anvil.c5c3.io/local"

// VolumeRoot is the hostPath directory volumes are created under.
const VolumeRoot = "/var/lib/anvil-volumes"

// Start installs the StorageClass and provisions volumes until ctx ends.
// It returns once its informers have synced.
func Start(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureStorageClass(ctx, cs); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(cs, 10*time.Minute)
	p := &provisioner{cs: cs}
	handler := func(obj any) { p.sync(ctx, obj) }
	if _, err := factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handler, UpdateFunc: func(_, obj any) { handler(obj) },
	}); err != nil {
		return err
	}
	if _, err := factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handler, UpdateFunc: func(_, obj any) { handler(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("provisioner: %v did not sync", typ)
		}
	}
	return nil
}

// ensureStorageClass creates the default StorageClass. Binding is
// immediate: a hostPath volume fits any node, so nothing waits for the
// scheduler's choice.
func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// provisioner reacts to claims and volumes.
type provisioner struct {
	cs kubernetes.Interface
}

// sync handles one claim or volume. Errors are dropped: the informer's
// resync brings the object back, and a test that waits on a claim sees it
// stay Pending.
func (p *provisioner) sync(ctx context.Context, obj any) {
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		if pv := BuildVolume(o); pv != nil {
			_, _ = p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		}
	case *corev1.PersistentVolume:
		if Releasable(o) {
			_ = p.cs.CoreV1().PersistentVolumes().Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	}
}

// BuildVolume returns the volume to bind claim to, or nil when the claim
// is not this provisioner's or is bound already. The volume's name derives
// from the claim's UID, so a repeated event creates nothing twice.
func BuildVolume(claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	if claim.Status.Phase != corev1.ClaimPending || claim.Spec.VolumeName != "" ||
		ptr.Deref(claim.Spec.StorageClassName, "") != StorageClassName || !claim.DeletionTimestamp.IsZero() {
		return nil
	}
	name := "pvc-" + string(claim.UID)
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClassName,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: VolumeRoot + "/" + name, Type: ptr.To(corev1.HostPathDirectoryOrCreate),
			}},
		},
	}
}

// Releasable reports whether a volume of this provisioner lost its claim
// and should go, as its reclaim policy says.
func Releasable(pv *corev1.PersistentVolume) bool {
	return pv.Annotations["pv.kubernetes.io/provisioned-by"] == Provisioner &&
		pv.Status.Phase == corev1.VolumeReleased &&
		pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete &&
		pv.DeletionTimestamp.IsZero()
}
