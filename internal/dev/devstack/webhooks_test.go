package devstack

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	webhookconfig "github.com/anvil/anvil/config/webhook"
)

func generatedConfig(paths ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validating-webhook-configuration"}}
	for i, p := range paths {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: "v" + strconv.Itoa(i) + ".example.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Name: "webhook-service", Namespace: "system", Path: ptr.To(p)},
			},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return cfg
}

func TestDevstackWebhookConfigs(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	tests := []struct {
		name      string
		generated []*admissionregistrationv1.ValidatingWebhookConfiguration
		port      int
		ca        []byte
		unserved  map[string]bool
		wantURLs  [][]string // per configuration kept
		wantErr   bool
	}{
		{
			name:      "every webhook served",
			generated: []*admissionregistrationv1.ValidatingWebhookConfiguration{generatedConfig("/a", "/b")},
			port:      9443, ca: ca,
			wantURLs: [][]string{{"https://127.0.0.1:9443/a", "https://127.0.0.1:9443/b"}},
		},
		{
			name:      "an unserved path is left out",
			generated: []*admissionregistrationv1.ValidatingWebhookConfiguration{generatedConfig("/a", "/b")},
			port:      9443, ca: ca, unserved: map[string]bool{"/b": true},
			wantURLs: [][]string{{"https://127.0.0.1:9443/a"}},
		},
		{
			name:      "a configuration with nothing served is dropped",
			generated: []*admissionregistrationv1.ValidatingWebhookConfiguration{generatedConfig("/a")},
			port:      9443, ca: ca, unserved: map[string]bool{"/a": true},
			wantURLs: nil,
		},
		{
			name:      "no port",
			generated: []*admissionregistrationv1.ValidatingWebhookConfiguration{generatedConfig("/a")},
			ca:        ca, wantErr: true,
		},
		{
			name:      "no CA bundle",
			generated: []*admissionregistrationv1.ValidatingWebhookConfiguration{generatedConfig("/a")},
			port:      9443, wantErr: true,
		},
		{
			name: "a webhook with a URL already has no path to take",
			generated: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
				ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{
					Name: "v.example.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://elsewhere/")},
				}},
			}},
			port: 9443, ca: ca, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.generated[0].DeepCopy()
			got, err := devstackWebhookConfigs(tt.generated, tt.port, tt.ca, tt.unserved)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(got) != len(tt.wantURLs) {
				t.Fatalf("got %d configurations, want %d", len(got), len(tt.wantURLs))
			}
			for i, cfg := range got {
				if cfg.Name != webhookConfigPrefix+"validating-webhook-configuration" {
					t.Errorf("name = %q", cfg.Name)
				}
				if cfg.Labels[managedByLabel] != managedByValue {
					t.Errorf("labels = %v", cfg.Labels)
				}
				if len(cfg.Webhooks) != len(tt.wantURLs[i]) {
					t.Fatalf("webhooks = %d, want %d", len(cfg.Webhooks), len(tt.wantURLs[i]))
				}
				for j, w := range cfg.Webhooks {
					cc := w.ClientConfig
					if cc.Service != nil || cc.URL == nil || *cc.URL != tt.wantURLs[i][j] {
						t.Errorf("webhook %s clientConfig = %+v, want url %s and no service", w.Name, cc, tt.wantURLs[i][j])
					}
					if !bytes.Equal(cc.CABundle, tt.ca) {
						t.Errorf("webhook %s caBundle = %q", w.Name, cc.CABundle)
					}
					if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
						t.Errorf("webhook %s lost failurePolicy Fail", w.Name)
					}
				}
			}
			if !reflect.DeepEqual(before, tt.generated[0]) {
				t.Error("the generated configuration was modified in place")
			}
		})
	}
}

// The embedded manifests must rewrite cleanly, and every webhook in them
// must map onto a kind the devstack's scheme knows, so the probe can ask
// without logging an error in the operator.
func TestEmbeddedManifestsRewrite(t *testing.T) {
	generated, err := webhookconfig.Validating()
	if err != nil {
		t.Fatal(err)
	}
	got, err := devstackWebhookConfigs(generated, 9443, []byte("ca"), nil)
	if err != nil {
		t.Fatal(err)
	}
	scheme := devstackScheme()
	paths := map[string]bool{}
	for _, cfg := range got {
		for _, w := range cfg.Webhooks {
			paths[*w.ClientConfig.URL] = true
			if probeTarget(scheme, w) == nil {
				t.Errorf("webhook %s: no kind in the scheme for rule %+v", w.Name, w.Rules)
			}
		}
	}
	if !paths["https://127.0.0.1:9443/validate-nova-openstack-c5c3-io-v1alpha1-nova"] {
		t.Errorf("the Nova webhook is missing: %v", paths)
	}
}

func TestProbeTarget(t *testing.T) {
	scheme := devstackScheme()
	rule := func(group, version, resource string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{{
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
		}}}
	}
	tests := []struct {
		hook     admissionregistrationv1.ValidatingWebhook
		wantKind string
	}{
		{rule("nova.openstack.c5c3.io", "v1alpha1", "novas"), "Nova"},
		{rule("c5c3.io", "v1alpha1", "controlplanes"), "ControlPlane"},
		{rule("c5c3.io", "v1alpha1", "unknowns"), ""},
		{admissionregistrationv1.ValidatingWebhook{}, ""},
	}
	for _, tt := range tests {
		got := probeTarget(scheme, tt.hook)
		switch {
		case tt.wantKind == "" && got != nil:
			t.Errorf("%+v: got %v, want none", tt.hook.Rules, got.gvk)
		case tt.wantKind != "" && (got == nil || got.gvk.Kind != tt.wantKind):
			t.Errorf("%+v: got %v, want %s", tt.hook.Rules, got, tt.wantKind)
		}
	}
}

// TestProbeWebhook runs a TLS server that, like controller-runtime's,
// offers only h2 and serves one path, with a certificate from a devstack CA.
func TestProbeWebhook(t *testing.T) {
	now := time.Now()
	caCert, caKey, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := issueServing(caCert, caKey, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	var seen *admissionv1.AdmissionRequest
	mux := http.NewServeMux()
	mux.HandleFunc("/served", func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		seen = review.Request
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	// The handshake without the CA below fails on purpose; keep it quiet.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}}
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCert)
	ctx := context.Background()
	if !webhookServing(ctx, pool, port) {
		t.Fatal("webhookServing = false for a server with a certificate from the CA")
	}
	if webhookServing(ctx, x509.NewCertPool(), port) {
		t.Error("webhookServing = true without the CA")
	}

	httpc := webhookHTTPClient(pool)
	target := probeTarget(devstackScheme(), admissionregistrationv1.ValidatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{{
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"nova.openstack.c5c3.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"novas"}},
	}}})
	served, err := probeWebhook(ctx, httpc, port, "/served", target)
	if err != nil || !served {
		t.Fatalf("probe of a served path = %v, %v", served, err)
	}
	if seen == nil || seen.Operation != admissionv1.Delete || seen.Kind.Kind != "Nova" || len(seen.OldObject.Raw) == 0 {
		t.Errorf("the probe sent %+v, want a DELETE of a Nova with an old object", seen)
	}
	served, err = probeWebhook(ctx, httpc, port, "/unserved", target)
	if err != nil || served {
		t.Errorf("probe of an unserved path = %v, %v", served, err)
	}
}
