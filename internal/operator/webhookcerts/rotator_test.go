package webhookcerts

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// rotatorFixture is a Rotator on a fake client holding a webhook
// configuration of two webhooks.
type rotatorFixture struct {
	t   *testing.T
	c   client.Client
	r   *Rotator
	cfg Config
}

func newRotatorFixture(t *testing.T) *rotatorFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "anvil"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "a.anvil.test"}, {Name: "b.anvil.test"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vwc).Build()
	cfg := Config{Secret: types.NamespacedName{Namespace: "ns", Name: "tls"}, WebhookConfiguration: "anvil",
		Hosts: []string{"svc.ns.svc"}, Lifetimes: Lifetimes{CA: 600 * time.Hour, Serving: 90 * time.Hour}}
	return &rotatorFixture{t: t, c: c, r: NewRotator(cfg, c, c, ctrl.Log), cfg: cfg}
}

// pass runs one pass at now and returns what it wrote.
func (f *rotatorFixture) pass(now time.Time) Result {
	f.t.Helper()
	res, err := f.r.Pass(context.Background(), now)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// state reads the Secret back.
func (f *rotatorFixture) state() State {
	f.t.Helper()
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), f.cfg.Secret, s); err != nil {
		f.t.Fatal(err)
	}
	return stateFromData(s.Data)
}

// bundles returns each webhook's caBundle.
func (f *rotatorFixture) bundles() [][]byte {
	f.t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: "anvil"}, vwc); err != nil {
		f.t.Fatal(err)
	}
	var out [][]byte
	for _, w := range vwc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// The Rotator creates the Secret and the caBundles, writes nothing when
// nothing is due, trusts a successor CA before it signs, and puts back a
// caBundle someone reset before it promotes.
func TestRotatorPasses(t *testing.T) {
	f := newRotatorFixture(t)
	if res := f.pass(t0); !res.SecretWritten || !res.WebhooksPatched {
		t.Fatalf("first pass %+v, want the Secret and the webhooks written", res)
	}
	first := f.state()
	for i, b := range f.bundles() {
		if !BundleHolds(b, first.CA.Cert) {
			t.Errorf("webhook %d does not trust the CA", i)
		}
	}
	if res := f.pass(t0.Add(time.Hour)); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a pass with nothing due wrote: %+v", res)
	}

	// The successor is made and trusted; the old CA still signs.
	if res := f.pass(RotateAt(first.CA.Cert)); !res.SecretWritten || !res.WebhooksPatched {
		t.Fatalf("rotation pass %+v", res)
	}
	rotating := f.state()
	if rotating.NextCA == nil || !rotating.CA.Cert.Equal(first.CA.Cert) {
		t.Fatal("no successor, or the signing CA changed before it was trusted")
	}
	if rotating.Serving.Cert.CheckSignatureFrom(first.CA.Cert) != nil {
		t.Fatal("the serving certificate is not the old CA's while the successor is only trusted")
	}

	// An upgrade resets the caBundles: the next pass writes them back and
	// does not promote; the one after promotes.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: "anvil"}, vwc); err != nil {
		t.Fatal(err)
	}
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].ClientConfig.CABundle = nil
	}
	if err := f.c.Update(context.Background(), vwc); err != nil {
		t.Fatal(err)
	}
	promoteAt := PromoteAt(first.CA.Cert)
	if res := f.pass(promoteAt); !res.WebhooksPatched || !f.state().CA.Cert.Equal(first.CA.Cert) {
		t.Fatalf("pass after a reset %+v, want the caBundles written back and no promotion", res)
	}
	if res := f.pass(promoteAt); !res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("promotion pass %+v, want the Secret written and the bundle unchanged", res)
	}
	promoted := f.state()
	if !promoted.CA.Cert.Equal(rotating.NextCA.Cert) || promoted.NextCA != nil {
		t.Fatal("the successor does not sign after its promotion")
	}
	if promoted.Serving.Cert.CheckSignatureFrom(promoted.CA.Cert) != nil {
		t.Fatal("the serving certificate was not reissued by the new CA")
	}
	for i, b := range f.bundles() {
		if !BundleHolds(b, first.CA.Cert) || !BundleHolds(b, promoted.CA.Cert) {
			t.Errorf("webhook %d does not trust both CAs until the old one expires", i)
		}
	}
	if res := f.pass(promoteAt); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a settled pass after the promotion wrote: %+v", res)
	}
}
