package ovncentral

import (
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSecretNeedsOwner(t *testing.T) {
	cert := &cmv1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Name: "c-client", Namespace: "openstack", UID: "cert-uid"},
		Spec:       cmv1.CertificateSpec{SecretName: "c-client"},
	}
	issued := func(mutate func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Name: "c-client", Namespace: "openstack",
			Annotations: map[string]string{cmv1.CertificateNameKey: "c-client"},
		}}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	ref := func(controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "c-client",
			UID: "cert-uid", Controller: ptr.To(controller)}
	}
	unread := cert.DeepCopy()
	unread.UID = ""
	tests := []struct {
		name   string
		cert   *cmv1.Certificate
		secret *corev1.Secret
		want   bool
	}{
		{name: "an issued Secret without the reference", cert: cert, secret: issued(nil), want: true},
		{name: "no Secret yet", cert: cert},
		{name: "a Certificate not read from the cluster", cert: unread, secret: issued(nil)},
		{name: "already tied", cert: cert, secret: issued(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{ref(false)}
		})},
		{name: "tied beside another owner", cert: cert, secret: issued(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other"}, ref(false)}
		})},
		{name: "another owner only", cert: cert, secret: issued(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other"}}
		}), want: true},
		{name: "cert-manager's own controller reference", cert: cert, secret: issued(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{ref(true)}
		})},
		{name: "another controller", cert: cert, secret: issued(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other", Controller: ptr.To(true)}}
		})},
		{name: "not issued by cert-manager", cert: cert, secret: issued(func(s *corev1.Secret) { s.Annotations = nil })},
		{name: "issued for another Certificate", cert: cert, secret: issued(func(s *corev1.Secret) {
			s.Annotations[cmv1.CertificateNameKey] = "someone-else"
		})},
		{name: "another Secret's name", cert: cert, secret: issued(func(s *corev1.Secret) { s.Name = "c-other" })},
		{name: "another namespace", cert: cert, secret: issued(func(s *corev1.Secret) { s.Namespace = "team-x" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SecretNeedsOwner(tt.cert, tt.secret); got != tt.want {
				t.Errorf("SecretNeedsOwner = %v, want %v", got, tt.want)
			}
		})
	}
}
