package webhookcerts_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"os"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator/webhookcerts"
)

var env *testenv.Environment

// t0 is when the fixture's first pass runs.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestMain starts a real apiserver for the Rotator to write to.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

// rotatorFixture is a Rotator on a real apiserver, with a webhook
// configuration of two webhooks that match nothing, so that no request is
// ever sent to them.
type rotatorFixture struct {
	t   *testing.T
	c   client.Client
	r   *webhookcerts.Rotator
	cfg webhookcerts.Config
}

func newRotatorFixture(t *testing.T) *rotatorFixture {
	t.Helper()
	c := testenv.Require(t, env).Management.Client
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "rotator-" + hex.EncodeToString(suffix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	none := admissionregistrationv1.SideEffectClassNone
	hook := func(n string) admissionregistrationv1.ValidatingWebhook {
		url := "https://127.0.0.1:1/" + n
		return admissionregistrationv1.ValidatingWebhook{
			Name: n, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
			}},
		}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook("a.anvil.test"), hook("b.anvil.test")},
	}
	if err := c.Create(t.Context(), vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), vwc)
		_ = c.Delete(context.Background(), ns)
	})
	cfg := webhookcerts.Config{Secret: types.NamespacedName{Namespace: name, Name: "tls"}, WebhookConfiguration: name,
		Hosts: []string{"svc.ns.svc"}, Lifetimes: webhookcerts.Lifetimes{CA: 600 * time.Hour, Serving: 90 * time.Hour}}
	return &rotatorFixture{t: t, c: c, r: webhookcerts.NewRotator(cfg, c, c, ctrl.Log), cfg: cfg}
}

// pass runs one pass at now and returns what it wrote.
func (f *rotatorFixture) pass(now time.Time) webhookcerts.Result {
	f.t.Helper()
	res, err := f.r.Pass(context.Background(), now)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// state reads the Secret back.
func (f *rotatorFixture) state() webhookcerts.State {
	f.t.Helper()
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), f.cfg.Secret, s); err != nil {
		f.t.Fatal(err)
	}
	return webhookcerts.StateFromData(s.Data)
}

// bundles returns each webhook's caBundle.
func (f *rotatorFixture) bundles() [][]byte {
	f.t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: f.cfg.WebhookConfiguration}, vwc); err != nil {
		f.t.Fatal(err)
	}
	var out [][]byte
	for _, w := range vwc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// On a real apiserver, the Rotator creates the Secret and the caBundles,
// writes nothing when nothing is due, trusts a successor CA before it
// signs, and puts back a caBundle someone reset before it promotes.
func TestIntegrationRotatorPasses(t *testing.T) {
	f := newRotatorFixture(t)
	if res := f.pass(t0); !res.SecretWritten || !res.WebhooksPatched {
		t.Fatalf("first pass %+v, want the Secret and the webhooks written", res)
	}
	first := f.state()
	for i, b := range f.bundles() {
		if !webhookcerts.BundleHolds(b, first.CA.Cert) {
			t.Errorf("webhook %d does not trust the CA", i)
		}
	}
	if res := f.pass(t0.Add(time.Hour)); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a pass with nothing due wrote: %+v", res)
	}

	// The successor is made and trusted; the old CA still signs.
	if res := f.pass(webhookcerts.RotateAt(first.CA.Cert)); !res.SecretWritten || !res.WebhooksPatched {
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
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: f.cfg.WebhookConfiguration}, vwc); err != nil {
		t.Fatal(err)
	}
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].ClientConfig.CABundle = nil
	}
	if err := f.c.Update(context.Background(), vwc); err != nil {
		t.Fatal(err)
	}
	promoteAt := webhookcerts.PromoteAt(first.CA.Cert)
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
	trustsBoth := func(when string) {
		t.Helper()
		for i, b := range f.bundles() {
			if !webhookcerts.BundleHolds(b, first.CA.Cert) || !webhookcerts.BundleHolds(b, promoted.CA.Cert) {
				t.Errorf("%s: webhook %d does not trust both CAs", when, i)
			}
		}
	}
	trustsBoth("after the promotion")
	if res := f.pass(promoteAt); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a settled pass after the promotion wrote: %+v", res)
	}

	// The replaced CA leaves the bundle once the webhook serves what the
	// new one signed and that has settled; not before, and not while this
	// replica still serves something else.
	retireAt := webhookcerts.RetireAt(promoted.Serving.Cert)
	if res := f.pass(retireAt.Add(-time.Second)); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a pass before the settle time wrote: %+v", res)
	}
	f.r.SetServes(func(c *x509.Certificate) bool { return !c.Equal(promoted.Serving.Cert) })
	if res := f.pass(retireAt); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a pass while the replica serves an older certificate wrote: %+v", res)
	}
	trustsBoth("while the replica serves an older certificate")
	f.r.SetServes(func(c *x509.Certificate) bool { return c.Equal(promoted.Serving.Cert) })
	if res := f.pass(retireAt); !res.SecretWritten || !res.WebhooksPatched {
		t.Fatalf("retiring pass %+v, want the Secret and the caBundles written", res)
	}
	for i, b := range f.bundles() {
		if webhookcerts.BundleHolds(b, first.CA.Cert) || !webhookcerts.BundleHolds(b, promoted.CA.Cert) {
			t.Errorf("webhook %d still trusts the replaced CA, or not the new one", i)
		}
	}
	if webhookcerts.BundleHolds(f.state().Bundle, first.CA.Cert) {
		t.Error("the Secret's bundle still holds the replaced CA")
	}
	if res := f.pass(retireAt); res.SecretWritten || res.WebhooksPatched {
		t.Fatalf("a settled pass after the retirement wrote: %+v", res)
	}
}
