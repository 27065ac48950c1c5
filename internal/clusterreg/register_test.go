package clusterreg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestRedactorLeavesCleanErrorsAlone(t *testing.T) {
	orig := apierrors.NewConflict(corev1.Resource("secrets"), "compute-a", errors.New("try again"))
	r := newRedactor(testToken, []byte("apiVersion: v1\nkind: Config\n"))
	got := r.redact(orig)
	var scrubbed *redactedError
	if errors.As(got, &scrubbed) || got.Error() != orig.Error() {
		t.Errorf("redact changed an error without credentials: %v", got)
	}
	dirty := fmt.Errorf("wrapped: %w", apierrors.NewBadRequest("echo "+testToken))
	got = r.redact(dirty)
	assertNoToken(t, "redacted error", got.Error())
	if !apierrors.IsBadRequest(got) {
		t.Error("the redacted error no longer unwraps to its cause")
	}
}

func TestRESTConfig(t *testing.T) {
	kc := clientcmdapi.NewConfig()
	for _, name := range []string{"mgmt", "compute"} {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example.com:6443"}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: name + "-token"}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kc.CurrentContext = "mgmt"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	// $KUBECONFIG must not win over an explicit path.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))

	tests := []struct {
		context  string
		wantHost string
		wantErr  bool
	}{
		{context: "", wantHost: "https://mgmt.example.com:6443"},
		{context: "mgmt", wantHost: "https://mgmt.example.com:6443"},
		{context: "compute", wantHost: "https://compute.example.com:6443"},
		{context: "absent", wantErr: true},
	}
	for _, tt := range tests {
		t.Run("context="+tt.context, func(t *testing.T) {
			cfg, err := RESTConfig(path, tt.context)
			if tt.wantErr {
				if err == nil {
					t.Fatal("RESTConfig succeeded, want an error")
				}
				if !strings.Contains(err.Error(), tt.context) {
					t.Errorf("error %q does not name the context", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RESTConfig: %v", err)
			}
			if cfg.Host != tt.wantHost {
				t.Errorf("host %q, want %q", cfg.Host, tt.wantHost)
			}
		})
	}

	t.Run("KUBECONFIG", func(t *testing.T) {
		t.Setenv("KUBECONFIG", path)
		cfg, err := RESTConfig("", "compute")
		if err != nil {
			t.Fatalf("RESTConfig: %v", err)
		}
		if cfg.Host != "https://compute.example.com:6443" {
			t.Errorf("host %q", cfg.Host)
		}
	})
}

func TestContextCAReadsTheFile(t *testing.T) {
	ca := testCA(t)
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := contextCA(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: path}})
	if err != nil || !bytes.Equal(got, ca) {
		t.Errorf("contextCA from file = %q, %v", got, err)
	}
	if got, err := contextCA(&rest.Config{}); err != nil || got != nil {
		t.Errorf("contextCA without a CA = %q, %v; want nil, nil", got, err)
	}
}

func TestServerURL(t *testing.T) {
	ca := rest.TLSClientConfig{CAData: []byte("ca")}
	tests := []struct {
		name    string
		cfg     *rest.Config
		want    string
		wantErr bool
	}{
		{name: "full URL", cfg: &rest.Config{Host: "https://10.0.0.1:6443"}, want: "https://10.0.0.1:6443"},
		{name: "proxy path kept", cfg: &rest.Config{Host: "https://proxy.example.com/k8s/clusters/c-1"}, want: "https://proxy.example.com/k8s/clusters/c-1"},
		{name: "host:port with a CA is https", cfg: &rest.Config{Host: "10.0.0.1:6443", TLSClientConfig: ca}, want: "https://10.0.0.1:6443"},
		{name: "host:port without TLS is http", cfg: &rest.Config{Host: "10.0.0.1:8080"}, want: "http://10.0.0.1:8080"},
		{name: "empty", cfg: &rest.Config{}, wantErr: true},
		{name: "host:port with a path", cfg: &rest.Config{Host: "user:secret@10.0.0.1/x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := serverURL(tt.cfg)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("serverURL = %q, want an error", got)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error quotes the host: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("serverURL = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
