package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBuildVolume(t *testing.T) {
	claim := func(mut func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openstack", Name: "db-ovn-nb-0", UID: "u1"},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(StorageClassName),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		}
		if mut != nil {
			mut(c)
		}
		return c
	}
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"pending claim of the class", claim(nil), true},
		{"bound already", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "x" }), false},
		{"not pending", claim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimBound }), false},
		{"another class", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") }), false},
		{"no class", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }), false},
	}
	for _, tt := range tests {
		pv := BuildVolume(tt.pvc)
		if (pv != nil) != tt.want {
			t.Errorf("%s: got %v", tt.name, pv)
			continue
		}
		if pv == nil {
			continue
		}
		if pv.Name != "pvc-u1" || pv.Spec.ClaimRef.UID != "u1" || pv.Spec.Capacity.Storage().String() != "1Gi" {
			t.Errorf("%s: volume %s claimRef %+v capacity %v", tt.name, pv.Name, pv.Spec.ClaimRef, pv.Spec.Capacity)
		}
	}
}

func TestReleasable(t *testing.T) {
	pv := func(phase corev1.PersistentVolumePhase, by string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": by}},
			Spec:       corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
			Status:     corev1.PersistentVolumeStatus{Phase: phase},
		}
	}
	if !Releasable(pv(corev1.VolumeReleased, Provisioner)) {
		t.Error("a released volume of ours is not releasable")
	}
	if Releasable(pv(corev1.VolumeBound, Provisioner)) || Releasable(pv(corev1.VolumeReleased, "someone-else")) {
		t.Error("a bound volume, or another provisioner's, is releasable")
	}
}
