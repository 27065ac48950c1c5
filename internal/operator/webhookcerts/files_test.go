package webhookcerts

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The writer swaps whole generations in, keeps only the newest, signals
// readiness on the first certificate, and leaves the directory alone when
// it already holds the Secret's pair.
func TestFileWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	key := types.NamespacedName{Namespace: "ns", Name: "certs"}
	w := newFileWriter(dir, key, ctrl.Log)
	ca := mustCA(t, t0, 1000*24*time.Hour)
	secret := func(p *KeyPair) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Data: map[string][]byte{KeyServingCert: p.CertPEM, KeyServingKey: p.KeyPEM}}
	}

	w.onSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	select {
	case <-w.ready:
		t.Fatal("ready without a certificate")
	default:
	}
	for range 3 {
		p := mustServing(t, t0, ca, 24*time.Hour, "x")
		w.onSecret(secret(p))
		<-w.ready
		if !w.holds(p) {
			t.Fatal("the directory does not hold the Secret's pair")
		}
		gens, err := filepath.Glob(filepath.Join(dir, generationGlob))
		if err != nil || len(gens) != 1 {
			t.Fatalf("generations %v (%v), want one", gens, err)
		}
	}
	before, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	crt, _ := os.ReadFile(filepath.Join(dir, KeyServingCert))
	keyPEM, _ := os.ReadFile(filepath.Join(dir, KeyServingKey))
	w.onSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data: map[string][]byte{KeyServingCert: crt, KeyServingKey: keyPEM}})
	if after, _ := os.Readlink(filepath.Join(dir, dataLink)); after != before {
		t.Error("an unchanged Secret rewrote the directory")
	}
	// Another Secret's certificate is none of its business.
	other := secret(mustServing(t, t0, ca, 24*time.Hour, "y"))
	other.Name = "other"
	w.onSecret(other)
	if after, _ := os.Readlink(filepath.Join(dir, dataLink)); after != before {
		t.Error("another Secret was written")
	}
}
