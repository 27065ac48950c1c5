package ovnchassis

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An issued identity wakes its chassis; a Secret of another component
// wakes nothing through this arm.
func TestChassisOfIdentitySecret(t *testing.T) {
	c := testChassis("compute-a")
	identity := func(component string) *corev1.Secret {
		l := childLabels(c, component)
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: IdentityName(c, "hv-1"), Labels: l}}
	}
	r := &Reconciler{}
	got := r.chassisOfSecret(context.Background(), identity(IdentityComponent))
	if len(got) != 1 || got[0].Name != c.Name || got[0].Namespace != c.Namespace {
		t.Errorf("an issued identity maps to %v, want its chassis", got)
	}
	if got := r.chassisOfSecret(context.Background(), identity("scripts")); len(got) != 0 {
		t.Errorf("another component maps to %v, want nothing", got)
	}
}
