package devstack

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/anvil/anvil/config/crd"
	webhookconfig "github.com/anvil/anvil/config/webhook"
	"github.com/anvil/anvil/internal/dev/testenv"
)

const (
	// webhookConfigPrefix prefixes the names of the devstack's copies of the
	// webhook configurations, so they are told apart from an install of the
	// operator's own manifests.
	webhookConfigPrefix = "anvil-devstack-"
	// managedByLabel marks what the devstack writes on the management
	// cluster, so it can find its own objects again.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "anvil-devstack"
)

// webhookURL is the address an apiserver calls for one webhook path.
func webhookURL(port int, path string) string {
	return "https://" + net.JoinHostPort(WebhookHost, strconv.Itoa(port)) + path
}

// webhookPath returns the path a generated webhook is served on.
// controller-gen writes a service reference; the devstack has no Service,
// so the path is all it keeps.
func webhookPath(w admissionregistrationv1.ValidatingWebhook) (string, error) {
	cc := w.ClientConfig
	switch {
	case cc.Service != nil && cc.Service.Path != nil:
		return *cc.Service.Path, nil
	case cc.Service != nil:
		return "/", nil
	default:
		return "", fmt.Errorf("webhook %s has no service reference to take the path from", w.Name)
	}
}

// devstackWebhookConfigs rewrites the generated configurations for the
// devstack: each webhook calls the operator on loopback by URL and trusts
// the devstack CA. Webhooks whose path is in unserved are left out, so that
// an operator that does not register a handler yet cannot make every
// request for that kind fail. A configuration left with no webhook is
// dropped. Everything else, failurePolicy included, is kept as generated.
func devstackWebhookConfigs(generated []*admissionregistrationv1.ValidatingWebhookConfiguration, port int, caBundle []byte, unserved map[string]bool) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("webhook port %d is out of range", port)
	}
	if len(caBundle) == 0 {
		return nil, errors.New("no CA bundle for the webhooks")
	}
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, gen := range generated {
		cfg := gen.DeepCopy()
		cfg.Name = webhookConfigPrefix + gen.Name
		cfg.ResourceVersion, cfg.UID = "", ""
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[managedByLabel] = managedByValue
		// The devstack's CA, not the chart's Certificate, signs what the
		// operator serves here: cert-manager must not inject another.
		delete(cfg.Annotations, "cert-manager.io/inject-ca-from")
		cfg.Webhooks = nil
		for _, w := range gen.Webhooks {
			path, err := webhookPath(w)
			if err != nil {
				return nil, err
			}
			if unserved[path] {
				continue
			}
			w = *w.DeepCopy()
			url := webhookURL(port, path)
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: slices.Clone(caBundle)}
			cfg.Webhooks = append(cfg.Webhooks, w)
		}
		if len(cfg.Webhooks) > 0 {
			out = append(out, cfg)
		}
	}
	return out, nil
}

// installWebhooks registers the operator's validating webhooks on the
// management cluster. It runs after startOperator has seen the webhook
// server answer, and on every `up`, so a restarted operator on another port
// or a renewed CA is picked up. Before it writes anything it asks the
// operator for each path, and leaves out the paths the operator does not
// serve.
func (s *Stack) installWebhooks(ctx context.Context, st *state) (string, error) {
	if st.Operator == nil || st.Operator.WebhookPort == 0 {
		return "", errors.New("the operator does not serve webhooks; run up again")
	}
	port := st.Operator.WebhookPort
	pool, caPEM, err := s.caPool()
	if err != nil {
		return "", err
	}
	generated, err := s.webhookConfigsToRegister(st.Operator)
	if err != nil {
		return "", err
	}
	httpc := webhookHTTPClient(pool)
	scheme := devstackScheme()
	unserved := map[string]bool{}
	var skipped []string
	for _, cfg := range generated {
		for _, w := range cfg.Webhooks {
			path, err := webhookPath(w)
			if err != nil {
				return "", err
			}
			served, err := probeWebhook(ctx, httpc, port, path, probeTarget(scheme, w))
			if err != nil {
				return "", fmt.Errorf("asking the operator for %s: %w", path, err)
			}
			if !served {
				unserved[path] = true
				skipped = append(skipped, w.Name)
			}
		}
	}
	want, err := devstackWebhookConfigs(generated, port, caPEM, unserved)
	if err != nil {
		return "", err
	}

	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	var names []string
	for _, w := range want {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
			if got.Labels == nil {
				got.Labels = map[string]string{}
			}
			maps.Copy(got.Labels, w.Labels)
			got.Webhooks = w.Webhooks
			return nil
		}); err != nil {
			return "", fmt.Errorf("ValidatingWebhookConfiguration %s: %w", w.Name, err)
		}
		for _, hook := range w.Webhooks {
			names = append(names, hook.Name)
		}
	}
	if err := s.pruneWebhookConfigs(ctx, c, want); err != nil {
		return "", err
	}
	detail := fmt.Sprintf("%s on %s", strings.Join(names, ", "), webhookURL(port, ""))
	if len(names) == 0 {
		detail = "none"
	}
	if len(skipped) > 0 {
		detail += "; left out (the operator does not serve them): " + strings.Join(skipped, ", ")
	}
	return detail, nil
}

// webhookConfigsToRegister are the configurations the devstack registers,
// pointed at the operator by installWebhooks: the chart's own in chart
// mode, so its namespace selector is what the devstack runs with, and the
// generated ones for a process operator.
func (s *Stack) webhookConfigsToRegister(op *operatorState) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if op.Mode != OperatorModeChart {
		return webhookconfig.Validating()
	}
	raw, err := os.ReadFile(s.operatorManifestPath())
	if err != nil {
		return nil, err
	}
	return chartWebhookConfigs(raw)
}

// pruneWebhookConfigs deletes the devstack's configurations that are no
// longer wanted, such as one whose only webhook the operator stopped
// serving; left in place it would refuse every request it matches.
func (s *Stack) pruneWebhookConfigs(ctx context.Context, c client.Client, want []*admissionregistrationv1.ValidatingWebhookConfiguration) error {
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.List(ctx, list, client.MatchingLabels{managedByLabel: managedByValue}); err != nil {
		return err
	}
	for i := range list.Items {
		live := &list.Items[i]
		if slices.ContainsFunc(want, func(w *admissionregistrationv1.ValidatingWebhookConfiguration) bool { return w.Name == live.Name }) {
			continue
		}
		if err := c.Delete(ctx, live); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the stale ValidatingWebhookConfiguration %s: %w", live.Name, err)
		}
	}
	return nil
}

// webhookHTTPClient dials the webhook server the way an apiserver does:
// over TLS, trusting only the devstack CA.
func webhookHTTPClient(pool *x509.CertPool) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			// The webhook server offers only h2 over ALPN; a client that
			// offers nothing but http/1.1 would fail the handshake.
			ForceAttemptHTTP2: true,
		},
	}
}

// webhookServing tells whether the operator's webhook server completes a
// TLS handshake that verifies against the devstack CA. The manager's
// readiness probe does not cover the webhook server, so this is checked on
// its own.
func webhookServing(ctx context.Context, pool *x509.CertPool, port int) bool {
	if port == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d := &tls.Dialer{Config: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(WebhookHost, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// probeKind is what a probe claims to delete: the kind and resource the
// webhook's first rule matches.
type probeKind struct {
	gvk schema.GroupVersionKind
	gvr schema.GroupVersionResource
}

// probeTarget finds the kind a webhook validates: the CRD of Anvil's whose
// group, plural and served version the webhook's first rule names, which
// says the kind exactly, where guessing it from the plural would not
// ("ovnchassis" is OVNChassis). It returns nil when no CRD matches or the
// scheme does not know the kind; the probe then asks with an empty body.
func probeTarget(scheme *runtime.Scheme, w admissionregistrationv1.ValidatingWebhook) *probeKind {
	if len(w.Rules) == 0 {
		return nil
	}
	r := w.Rules[0]
	if len(r.APIGroups) == 0 || len(r.APIVersions) == 0 || len(r.Resources) == 0 {
		return nil
	}
	gvr := schema.GroupVersionResource{Group: r.APIGroups[0], Version: r.APIVersions[0], Resource: r.Resources[0]}
	crds, err := anvilCRDs()
	if err != nil {
		return nil
	}
	for _, c := range crds {
		if c.Spec.Group != gvr.Group || c.Spec.Names.Plural != gvr.Resource {
			continue
		}
		gvk := gvr.GroupVersion().WithKind(c.Spec.Names.Kind)
		if scheme.Recognizes(gvk) {
			return &probeKind{gvk: gvk, gvr: gvr}
		}
	}
	return nil
}

// anvilCRDs reads Anvil's embedded CRDs once.
var anvilCRDs = sync.OnceValues(crd.Definitions)

// probeWebhook tells whether the operator serves a webhook path. It sends a
// DELETE review of a made-up object, which a validator admits without
// looking at anything, so the probe changes nothing and logs nothing. An
// unregistered path answers 404 from the server's mux.
func probeWebhook(ctx context.Context, httpc *http.Client, port int, path string, target *probeKind) (bool, error) {
	var body []byte
	if target != nil {
		old, err := json.Marshal(map[string]any{
			"apiVersion": target.gvk.GroupVersion().String(),
			"kind":       target.gvk.Kind,
			"metadata":   map[string]any{"name": "anvil-devstack-probe", "namespace": testenv.WorkloadNamespace},
		})
		if err != nil {
			return false, err
		}
		review := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID:       "anvil-devstack-probe",
				Kind:      metav1.GroupVersionKind{Group: target.gvk.Group, Version: target.gvk.Version, Kind: target.gvk.Kind},
				Resource:  metav1.GroupVersionResource{Group: target.gvr.Group, Version: target.gvr.Version, Resource: target.gvr.Resource},
				Name:      "anvil-devstack-probe",
				Namespace: testenv.WorkloadNamespace,
				Operation: admissionv1.Delete,
				UserInfo:  authenticationv1.UserInfo{Username: "anvil-devstack"},
				OldObject: runtime.RawExtension{Raw: old},
			},
		}
		if body, err = json.Marshal(review); err != nil {
			return false, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhookURL(port, path), bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("unexpected HTTP %d", resp.StatusCode)
	}
}

// webhookConfigCount counts the webhooks the devstack registered, for
// status.
func webhookConfigCount(ctx context.Context, c client.Client) (int, error) {
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.List(ctx, list, client.MatchingLabels{managedByLabel: managedByValue}); err != nil {
		return 0, err
	}
	n := 0
	for _, cfg := range list.Items {
		n += len(cfg.Webhooks)
	}
	return n, nil
}
