package clusterreg

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/anvil/anvil/internal/targetcluster"
)

// testToken stands in for a ServiceAccount token. Every test checks that it
// never shows up in an error or in printed output.
const testToken = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLXBheWxvYWQ.do-not-print-me"

// testCA returns a self-signed CA certificate in PEM form.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// assertNoToken fails the test if s contains the token.
func assertNoToken(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, testToken) {
		t.Errorf("%s contains the token (%d bytes; not printed)", what, len(s))
	}
}

func TestBuildKubeconfig(t *testing.T) {
	ca := testCA(t)
	tests := []struct {
		name    string
		cluster string
		server  string
		ca      []byte
		token   string
		wantErr string
	}{
		{name: "valid", cluster: "compute-a", server: "https://10.0.0.1:6443", ca: ca, token: testToken},
		{name: "server with a path", cluster: "compute-a", server: "https://proxy.example.com/k8s/clusters/c-1", ca: ca, token: testToken},
		{name: "no CA uses the system roots", cluster: "compute-a", server: "https://api.example.com", token: testToken},
		{name: "server without a scheme", cluster: "compute-a", server: "10.0.0.1:6443", ca: ca, token: testToken, wantErr: "no valid server URL"},
		{name: "empty server", cluster: "compute-a", server: "", ca: ca, token: testToken, wantErr: "no valid server URL"},
		{name: "credentials in the server URL", cluster: "compute-a", server: "https://admin:hunter2@10.0.0.1:6443", ca: ca, token: testToken, wantErr: "credentials in its server URL"},
		{name: "empty token", cluster: "compute-a", server: "https://10.0.0.1:6443", ca: ca, token: "", wantErr: "token is empty"},
		{name: "CA not PEM", cluster: "compute-a", server: "https://10.0.0.1:6443", ca: []byte("not a certificate"), token: testToken, wantErr: "not a PEM certificate bundle"},
		{name: "empty name", cluster: "", server: "https://10.0.0.1:6443", ca: ca, token: testToken, wantErr: "needs a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := BuildKubeconfig(tt.cluster, tt.server, tt.ca, tt.token)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("BuildKubeconfig succeeded, want an error containing %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				assertNoToken(t, "error", err.Error())
				if strings.Contains(err.Error(), "hunter2") {
					t.Error("the error quotes the server URL's password (not printed)")
				}
				return
			}
			if err != nil {
				t.Fatalf("BuildKubeconfig: %v", err)
			}
			kc, err := clientcmd.Load(raw)
			if err != nil {
				t.Fatalf("the result does not load: %v", err)
			}
			if kc.CurrentContext != tt.cluster || len(kc.Contexts) != 1 {
				t.Errorf("contexts %v, current %q; want only %q", kc.Contexts, kc.CurrentContext, tt.cluster)
			}
			ctx := kc.Contexts[kc.CurrentContext]
			cluster, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
			if cluster.Server != tt.server {
				t.Errorf("server %q, want %q", cluster.Server, tt.server)
			}
			if !bytes.Equal(cluster.CertificateAuthorityData, tt.ca) {
				t.Error("the CA is not embedded as given")
			}
			if user.Token != tt.token {
				t.Error("the token is not embedded as given")
			}
			// The operator must accept what the CLI writes.
			secret := targetcluster.BuildRegistrationSecret(tt.cluster, "c5c3-clusters", raw, "openstack")
			if _, err := targetcluster.ParseRegistration(secret); err != nil {
				t.Errorf("the operator would refuse the registration: %v", err)
			}
		})
	}
}
