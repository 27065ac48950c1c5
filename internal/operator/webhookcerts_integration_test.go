package operator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
	"github.com/anvil/anvil/internal/operator/webhookcerts"
)

// The objects of the webhook certificate test: a namespace whose
// ConfigMaps a probe webhook checks, and the configuration that registers
// it with the URL of the operator's webhook server.
const (
	certsNamespace = "webhook-certs"
	certsConfig    = "anvil-webhook-certs-test"
	denyLabel      = "webhook-certs.anvil.test/deny"
	denyMessage    = "denied by the probe webhook"
)

// probeHandler admits every ConfigMap but those labelled denyLabel, so a
// refusal proves the apiserver reached the operator's server.
var probeHandler = admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err == nil && obj.Labels[denyLabel] != "" {
		return admission.Denied(denyMessage)
	}
	return admission.Allowed("")
})

// certsFixture is one run of the operator in self-signed mode.
type certsFixture struct {
	t      *testing.T
	c      client.Client
	secret types.NamespacedName
	addr   string
}

// startCertsOperator starts the operator's manager with the operator's
// own webhook certificates in secret, and the probe webhook registered on
// its webhook server. The returned function stops it.
func startCertsOperator(t *testing.T, e *testenv.Environment, f *certsFixture, port int, life webhookcerts.Lifetimes) func() {
	t.Helper()
	opts := &operator.Options{
		MetricsBindAddress:      "0",
		HealthProbeBindAddress:  freeAddr(t),
		LeaderElect:             true,
		LeaderElectionNamespace: testenv.WorkloadNamespace,
		WatchNamespaces:         []string{certsNamespace},
		EnableWebhooks:          true,
		WebhookPort:             port,
		WebhookCertDir:          t.TempDir(),
		WebhookCerts: operator.WebhookCertOptions{
			Secret:        f.secret.String(),
			Configuration: certsConfig,
			// The apiserver dials the URL's loopback address.
			Hosts:     []string{"127.0.0.1"},
			Lifetimes: life,
		},
	}
	mgr, err := operator.NewManager(e.Management.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	mgr.GetWebhookServer().Register("/probe", &webhook.Admission{Handler: probeHandler})
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
		// A repeated run starts from no Secret, as a first install does.
		if err := e.Management.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.secret.Namespace, Name: f.secret.Name}}); err != nil {
			t.Errorf("deleting the certificate Secret: %v", err)
		}
	}
}

// installProbeConfig registers the probe webhook for ConfigMaps in
// certsNamespace, without a caBundle: the operator adds it.
func installProbeConfig(ctx context.Context, t *testing.T, c client.Client, port int) {
	t.Helper()
	// The namespace stays for a repeated run (-count) on the same cluster.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certsNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: certsConfig},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "probe.webhook-certs.anvil.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/probe")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: certsNamespace}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	if err := c.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), vwc); err != nil {
			t.Errorf("deleting the probe webhook configuration: %v", err)
		}
	})
}

// admit creates a ConfigMap through admission and reports the error; with
// deny set the probe webhook must refuse it.
func (f *certsFixture) admit(ctx context.Context, deny bool) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: certsNamespace, GenerateName: "probe-"}}
	if deny {
		cm.Labels = map[string]string{denyLabel: "true"}
	}
	return f.c.Create(ctx, cm)
}

// checkAdmission proves the apiserver calls the webhook over TLS it
// verifies with the caBundle: an ordinary ConfigMap is admitted and a
// labelled one refused by the webhook itself.
func (f *certsFixture) checkAdmission(ctx context.Context, when string) {
	f.t.Helper()
	if err := f.admit(ctx, false); err != nil {
		f.t.Fatalf("%s: admission failed: %v", when, err)
	}
	if err := f.admit(ctx, true); err == nil || !strings.Contains(err.Error(), denyMessage) {
		f.t.Fatalf("%s: the probe webhook did not answer: %v", when, err)
	}
}

// state reads the Secret and the configuration's caBundle.
func (f *certsFixture) state(ctx context.Context) (*corev1.Secret, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	f.t.Helper()
	s := &corev1.Secret{}
	if err := f.c.Get(ctx, f.secret, s); err != nil {
		s = nil
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(ctx, client.ObjectKey{Name: certsConfig}, vwc); err != nil {
		f.t.Fatal(err)
	}
	return s, vwc
}

// served dials the webhook server, verifying it as the apiserver does
// with the configuration's caBundle, and returns the leaf it serves.
func (f *certsFixture) served(ctx context.Context) (*x509.Certificate, error) {
	_, vwc := f.state(ctx)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle) {
		return nil, fmt.Errorf("no caBundle yet")
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", f.addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

// waitFor polls cond until it holds; the bound only ends a hung test.
func waitFor(ctx context.Context, t *testing.T, what string, cond func(context.Context) bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	}); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// secretCert returns the first certificate of a Secret's key.
func secretCert(t *testing.T, s *corev1.Secret, key string) *x509.Certificate {
	t.Helper()
	certs := webhookcerts.ParseCertificates(s.Data[key])
	if len(certs) == 0 {
		t.Fatalf("Secret %s holds no %s", s.Name, key)
	}
	return certs[0]
}

// ready reports whether the Secret holds a serving certificate and every
// webhook trusts the Secret's bundle.
func (f *certsFixture) ready(ctx context.Context) bool {
	s, vwc := f.state(ctx)
	if s == nil || len(s.Data[webhookcerts.KeyServingCert]) == 0 {
		return false
	}
	for _, w := range vwc.Webhooks {
		if string(w.ClientConfig.CABundle) != string(s.Data[webhookcerts.KeyBundle]) {
			return false
		}
	}
	return true
}

// The operator, with no cert-manager, issues its own CA and serving
// certificate, makes the apiserver trust them, keeps serving through a
// renewal and a CA rotation, and writes nothing when nothing is due.
func TestIntegrationWebhookCertificatesIssuedAndRotatedByTheOperator(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	addr := freeAddr(t)
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	installProbeConfig(ctx, t, e.Management.Client, port)

	t.Run("settled", func(t *testing.T) {
		f := &certsFixture{t: t, c: e.Management.Client, addr: addr,
			secret: types.NamespacedName{Namespace: certsNamespace, Name: "webhook-tls-default"}}
		stop := startCertsOperator(t, e, f, port, webhookcerts.Lifetimes{})
		defer stop()
		waitFor(ctx, t, "the Secret and the caBundle appear", f.ready)
		waitFor(ctx, t, "the server serves the Secret's certificate", func(ctx context.Context) bool {
			leaf, err := f.served(ctx)
			s, _ := f.state(ctx)
			return err == nil && leaf.Equal(secretCert(t, s, webhookcerts.KeyServingCert))
		})
		f.checkAdmission(ctx, "after the first certificate")

		// A pass with nothing due, the running leader's or this one,
		// writes nothing.
		s, vwc := f.state(ctx)
		rotator := webhookcerts.NewRotator(webhookcerts.Config{Secret: f.secret, WebhookConfiguration: certsConfig,
			Hosts: []string{"127.0.0.1"}}, f.c, f.c, ctrl.Log)
		res, err := rotator.Pass(ctx, time.Now())
		if err != nil || res.SecretWritten || res.WebhooksPatched {
			t.Fatalf("a pass with nothing due: %+v, %v", res, err)
		}
		f.checkAdmission(ctx, "after a pass")
		s2, vwc2 := f.state(ctx)
		if s2.ResourceVersion != s.ResourceVersion || vwc2.ResourceVersion != vwc.ResourceVersion {
			t.Errorf("a settled system was written: Secret %s -> %s, configuration %s -> %s",
				s.ResourceVersion, s2.ResourceVersion, vwc.ResourceVersion, vwc2.ResourceVersion)
		}
	})

	t.Run("renewal and CA rotation", func(t *testing.T) {
		f := &certsFixture{t: t, c: e.Management.Client, addr: addr,
			secret: types.NamespacedName{Namespace: certsNamespace, Name: "webhook-tls-short"}}
		// Lifetimes short enough to see a renewal and a CA rotation: the
		// successor CA is trusted after 16s and signs after 20s.
		stop := startCertsOperator(t, e, f, port, webhookcerts.Lifetimes{Serving: 6 * time.Second, CA: 24 * time.Second})
		defer stop()
		waitFor(ctx, t, "the Secret and the caBundle appear", f.ready)
		s, _ := f.state(ctx)
		firstCA, firstLeaf := secretCert(t, s, webhookcerts.KeyCACert), secretCert(t, s, webhookcerts.KeyServingCert)
		waitFor(ctx, t, "the first certificate is served", func(ctx context.Context) bool {
			leaf, err := f.served(ctx)
			return err == nil && leaf.Equal(firstLeaf)
		})
		f.checkAdmission(ctx, "after the first certificate")
		failures := admitContinuously(ctx, f)

		waitFor(ctx, t, "a renewed certificate of the same CA is served", func(ctx context.Context) bool {
			leaf, err := f.served(ctx)
			return err == nil && !leaf.Equal(firstLeaf) && leaf.CheckSignatureFrom(firstCA) == nil
		})
		f.checkAdmission(ctx, "after the renewal")

		waitFor(ctx, t, "a certificate of the successor CA is served", func(ctx context.Context) bool {
			leaf, err := f.served(ctx)
			return err == nil && leaf.CheckSignatureFrom(firstCA) != nil
		})
		s, vwc := f.state(ctx)
		newCA := secretCert(t, s, webhookcerts.KeyCACert)
		if newCA.Equal(firstCA) || !webhookcerts.BundleHolds(vwc.Webhooks[0].ClientConfig.CABundle, newCA) {
			t.Fatal("the new serving certificate's CA is not the trusted successor")
		}
		f.checkAdmission(ctx, "after the CA rotation")
		if errs := failures(); len(errs) > 0 {
			t.Errorf("%d admissions failed during renewal and rotation, first: %v", len(errs), errs[0])
		}
	})
}

// admitContinuously creates ConfigMaps through admission until the
// returned function is called, which returns the failures.
func admitContinuously(ctx context.Context, f *certsFixture) func() []error {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := f.admit(ctx, false); err != nil && ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}
	}()
	return func() []error {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return errs
	}
}
