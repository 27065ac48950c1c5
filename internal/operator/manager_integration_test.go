package operator_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// The manager the binary runs serves its probes and metrics and takes the
// leader Lease on a real management cluster.
func TestIntegrationManagerServesProbesAndElectsALeader(t *testing.T) {
	e := testenv.Require(t, env)
	opts := &operator.Options{
		MetricsBindAddress:      freeAddr(t),
		MetricsSecure:           true,
		HealthProbeBindAddress:  freeAddr(t),
		LeaderElect:             true,
		LeaderElectionNamespace: testenv.WorkloadNamespace,
		ClustersNamespace:       operator.DefaultClustersNamespace,
		// Every controller starts on a cache limited to the namespaces
		// the operator manages, as the chart runs it.
		WatchNamespaces: []string{testenv.WorkloadNamespace},
		EnableWebhooks:  true,
		WebhookPort:     e.Management.WebhookServerOptions().Port,
		WebhookCertDir:  e.Management.WebhookServerOptions().CertDir,
	}
	mgr, err := operator.NewManager(e.Management.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Setup(context.Background(), mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}()

	get := func(url string) bool {
		resp, err := http.Get(url) //nolint:noctx // loopback URL built by the test
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return get("http://"+opts.HealthProbeBindAddress+"/readyz") &&
			get("http://"+opts.HealthProbeBindAddress+"/healthz"), nil
	})
	if err != nil {
		t.Fatalf("the probes did not answer: %v", err)
	}
	checkSecureMetrics(ctx, t, e.Management, "https://"+opts.MetricsBindAddress+"/metrics")

	// The webhook server speaks TLS 1.2 or later, and no HTTP/2.
	webhookAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.WebhookPort))
	// The test checks the protocol, not the certificate, on loopback.
	if conn, err := tls.Dial("tcp", webhookAddr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
		conn.Close()
		t.Error("the webhook server accepted TLS 1.1")
	}
	conn, err := tls.Dial("tcp", webhookAddr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("dialing the webhook server: %v", err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Error("the webhook server negotiated HTTP/2")
	}
	conn.Close()

	lease := &coordinationv1.Lease{}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: "anvil-operator.c5c3.io"}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		t.Fatalf("the manager did not take the leader Lease: %v", err)
	}
}
