package targetcluster_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/targetcluster"
)

// A registration Secret names any address its writer likes. Whatever
// answers there, or does not, the owners' conditions read the same fixed
// sentence: a dial error, a certificate failure or a status code in a
// condition would let the writer map what listens on the operator's
// network. Every address here is on loopback, made by the test.
func TestIntegrationUnusableRegistrationsReadAlike(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	good, err := env.ComputeCluster("compute-a").RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}

	// A loopback port that nothing listens on.
	free, err := netutil.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(free[0])
	// A TLS server the registration's CA does not sign.
	stranger := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(stranger.Close)
	// A TLS server the registration trusts that is no ready apiserver.
	notReady := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(notReady.Close)
	notReadyCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: notReady.Certificate().Raw})

	cases := map[string]func(*clientcmdapi.Cluster){
		"unusable-closed": func(c *clientcmdapi.Cluster) { c.Server = "https://127.0.0.1:" + closed },
		"unusable-stranger": func(c *clientcmdapi.Cluster) {
			c.Server = stranger.URL
		},
		"unusable-not-ready": func(c *clientcmdapi.Cluster) {
			c.Server, c.CertificateAuthorityData = notReady.URL, notReadyCA
		},
	}
	for name, mutate := range cases {
		s := targetcluster.BuildRegistrationSecret(name, env.ClustersNamespace, withCluster(t, good, mutate), "")
		if err := env.Management.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Management.Client.Delete(context.Background(), s) })
	}

	// What each address would give away if a condition repeated the cause.
	telltales := []string{"refused", "dial", "x509", "certificate", "tls", "503", "Service Unavailable", "404", closed,
		portOf(t, stranger.URL), portOf(t, notReady.URL)}
	for name := range cases {
		var msg string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, err := op.registry.Resolve(name)
			if err == nil {
				return false, fmt.Errorf("%s resolved", name)
			}
			msg = err.Error()
			return strings.Contains(msg, targetcluster.NotConnectedReason), nil
		})
		if err != nil {
			t.Fatalf("%s: %v; last message %q", name, err, msg)
		}
		if want := fmt.Sprintf("target cluster %q is unavailable: %s", name, targetcluster.NotConnectedReason); msg != want {
			t.Errorf("%s: message %q, want %q", name, msg, want)
		}
		for _, tell := range telltales {
			if strings.Contains(strings.ToLower(msg), strings.ToLower(tell)) {
				t.Errorf("%s: message %q repeats %q", name, msg, tell)
			}
		}
	}
}

// portOf returns the port of a server URL.
func portOf(t *testing.T, raw string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(raw, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	return port
}
