package operator_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// The operator chart, and the release name whose objects are called
// "anvil-operator".
const (
	operatorChart   = "charts/anvil-operator"
	operatorRelease = "anvil-operator"
)

// metricsReader is the name of the chart's ClusterRole for scrapers, and of
// the ClusterRoleBinding that grants it to metrics.readers.
const metricsReader = operatorRelease + "-metrics-reader"

// checkSecureMetrics proves the metrics endpoint answers only TLS 1.2+
// without HTTP/2, refuses a caller without a token and one whose token is
// not authorized, and serves one whose ServiceAccount the chart binds to
// its metrics reader role. The role and binding are the chart's own, as
// `helm template` renders them, so a chart whose reader role no longer
// opens /metrics fails here.
func checkSecureMetrics(ctx context.Context, t *testing.T, c *testenv.Cluster, url string) {
	t.Helper()
	// The server's certificate is self-signed; the test checks who may
	// read, not the certificate, on loopback, so it skips verification.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
	}}
	status := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(body)
	}
	// The server starts with the manager; wait until it answers at all.
	var code int
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _ = status("")
		return code != 0, nil
	}); err != nil {
		t.Fatalf("the metrics endpoint did not answer: %v", err)
	}
	if code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("without a token the metrics endpoint answered %d, want 401 or 403", code)
	}

	cs := kubernetes.NewForConfigOrDie(c.Config)
	stranger := serviceAccountToken(ctx, t, cs, "metrics-stranger")
	if code, _ := status(stranger); code != http.StatusForbidden {
		t.Errorf("a token without the reader role got %d, want 403", code)
	}
	reader := serviceAccountToken(ctx, t, cs, "metrics-scraper")
	applyChartMetricsReader(ctx, t, c, "metrics-scraper")
	var body string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body = status(reader)
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("the reader's token got %d: %.200s", code, body)
	}
	if !strings.Contains(body, "controller_runtime_") {
		t.Errorf("the metrics hold no controller-runtime series: %.300s", body)
	}

	// TLS 1.1 and HTTP/2 are refused, as on the webhook server.
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/metrics")
	if conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
		conn.Close()
		t.Error("the metrics server accepted TLS 1.1")
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("dialing the metrics server: %v", err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Error("the metrics server negotiated HTTP/2")
	}
	conn.Close()
}

// serviceAccountToken makes a ServiceAccount in the workload namespace and
// returns a short-lived token for it.
func serviceAccountToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ns := testenv.WorkloadNamespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s: %v", name, err)
	}
	return tr.Status.Token
}

// applyChartMetricsReader renders the operator chart with sa as its one
// metrics reader and applies only the metrics-reader ClusterRole and
// ClusterRoleBinding: the rest of the chart (the Deployment, the
// webhooks) has no place on the test's cluster, where the operator runs
// in the test process.
func applyChartMetricsReader(ctx context.Context, t *testing.T, c *testenv.Cluster, sa string) {
	t.Helper()
	objs, err := testenv.RenderChart(operatorChart, operatorRelease, "anvil-system",
		"--set", "image.repository=registry.example/anvil/anvil-operator",
		"--set", "metrics.readers[0].kind=ServiceAccount,metrics.readers[0].name="+sa+",metrics.readers[0].namespace="+testenv.WorkloadNamespace)
	if err != nil {
		t.Fatal(err)
	}
	var reader []*unstructured.Unstructured
	for _, o := range objs {
		if (o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding") && o.GetName() == metricsReader {
			reader = append(reader, o)
		}
	}
	if len(reader) != 2 {
		t.Fatalf("the chart rendered %d objects named %s, want its ClusterRole and ClusterRoleBinding", len(reader), metricsReader)
	}
	if err := c.Apply(ctx, reader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range reader {
			_ = c.Client.Delete(context.Background(), o)
		}
	})
}
