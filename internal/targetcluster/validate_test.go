package targetcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWith returns a valid kubeconfig after applying mutate to it.
func kubeconfigWith(t testing.TB, mutate func(*clientcmdapi.Config)) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("CA")}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "s3cr3t-token"}
	kc.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "ctx"
	if mutate != nil {
		mutate(kc)
	}
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestParseRegistration(t *testing.T) {
	tests := []struct {
		name       string
		data       map[string][]byte
		wantReason RefusalReason
		wantNS     []string
	}{
		{name: "valid cluster-wide", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, nil)}},
		{name: "valid scoped", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, nil), NamespacesKey: []byte(" openstack , ovn,openstack")}, wantNS: []string{"openstack", "ovn"}},
		{name: "missing kubeconfig", data: map[string][]byte{}, wantReason: RefusedMissingKubeconfig},
		{name: "empty kubeconfig", data: map[string][]byte{KubeconfigKey: {}}, wantReason: RefusedMissingKubeconfig},
		{name: "garbage kubeconfig", data: map[string][]byte{KubeconfigKey: []byte("{not yaml: [")}, wantReason: RefusedInvalidKubeconfig},
		{name: "empty namespaces", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, nil), NamespacesKey: {}}, wantReason: RefusedInvalidNamespaces},
		{name: "bad namespace", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, nil), NamespacesKey: []byte("openstack,Bad_NS")}, wantReason: RefusedInvalidNamespaces},
		{name: "trailing comma", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, nil), NamespacesKey: []byte("openstack,")}, wantReason: RefusedInvalidNamespaces},
		{name: "exec", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "get-token", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		})}, wantReason: RefusedExecCredential},
		{name: "exec on a user no context uses", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "x", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
		})}, wantReason: RefusedExecCredential},
		{name: "auth provider", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		})}, wantReason: RefusedAuthProvider},
		{name: "token file", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].TokenFile = "/var/run/token"
		})}, wantReason: RefusedCredentialFile},
		{name: "client certificate file", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ClientCertificate = "/etc/crt"
		})}, wantReason: RefusedCredentialFile},
		{name: "client key file", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ClientKey = "/etc/key"
		})}, wantReason: RefusedCredentialFile},
		{name: "CA file", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].CertificateAuthority = "/etc/ca"
		})}, wantReason: RefusedCertificateFile},
		{name: "password in server URL", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].Server = "https://admin:hunter2@127.0.0.1:6443"
		})}, wantReason: RefusedCredentialInServer},
		{name: "insecure skip TLS verify", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].InsecureSkipTLSVerify, kc.Clusters["c"].CertificateAuthorityData = true, nil
		})}, wantReason: RefusedInsecureTLS},
		{name: "plaintext server", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].Server = "http://127.0.0.1:8080"
		})}, wantReason: RefusedPlaintextServer},
		{name: "proxy", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].ProxyURL = "socks5://hunter2@proxy.example.com:1080"
		})}, wantReason: RefusedProxy},
		{name: "impersonated user", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].Impersonate = "system:admin"
		})}, wantReason: RefusedImpersonation},
		{name: "impersonated groups", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ImpersonateGroups = []string{"system:masters"}
		})}, wantReason: RefusedImpersonation},
		{name: "no current context", data: map[string][]byte{KubeconfigKey: kubeconfigWith(t, func(kc *clientcmdapi.Config) {
			kc.CurrentContext = "missing"
		})}, wantReason: RefusedInvalidKubeconfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := ParseRegistration(&corev1.Secret{Data: tt.data})
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("unexpected refusal: %v", err)
				}
				if strings.Join(reg.Namespaces, ",") != strings.Join(tt.wantNS, ",") || reg.Hash == "" {
					t.Errorf("registration = %+v", reg)
				}
				return
			}
			r, ok := IsRefusal(err)
			if !ok || r.Reason != tt.wantReason {
				t.Fatalf("err = %v, want reason %s", err, tt.wantReason)
			}
			for _, secret := range []string{"s3cr3t-token", "hunter2", "/var/run/token", "/etc/", "system:", "proxy.example.com", "127.0.0.1"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("refusal %q quotes %q from the Secret", err, secret)
				}
			}
		})
	}
}

func TestRegistrationHash(t *testing.T) {
	kc := []byte("kubeconfig")
	base := registrationHash(kc, nil, false)
	if base != registrationHash(kc, nil, false) {
		t.Error("the hash is not deterministic")
	}
	distinct := map[string]string{
		"cluster-wide":      base,
		"empty scope":       registrationHash(kc, []byte{}, true),
		"scoped":            registrationHash(kc, []byte("openstack"), true),
		"rotated":           registrationHash([]byte("kubeconfig2"), nil, false),
		"scope moved in kc": registrationHash([]byte("kubeconfigopenstack"), nil, false),
	}
	seen := map[string]string{}
	for name, h := range distinct {
		if other, dup := seen[h]; dup {
			t.Errorf("%s and %s hash alike", name, other)
		}
		seen[h] = name
	}
}

func TestCheckRegistrationScope(t *testing.T) {
	tests := []struct {
		name       string
		namespaces []string
		allow      bool
		refused    bool
	}{
		{name: "scoped, cluster-wide not allowed", namespaces: []string{"openstack"}},
		{name: "scoped, cluster-wide allowed", namespaces: []string{"openstack", "ovn"}, allow: true},
		{name: "no namespaces, not allowed", refused: true},
		{name: "no namespaces, allowed", allow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRegistrationScope(&Registration{Namespaces: tt.namespaces}, tt.allow)
			refusal, isRefusal := IsRefusal(err)
			switch {
			case !tt.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused && (!isRefusal || refusal.Reason != RefusedClusterWide):
				t.Fatalf("got %v, want a %s refusal", err, RefusedClusterWide)
			case tt.refused && !strings.Contains(err.Error(), "--allow-cluster-wide-registrations"):
				t.Errorf("the refusal %q does not name the flag that allows it", err)
			}
		})
	}
}

func TestMayHold(t *testing.T) {
	scoped := func(v string) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{NamespacesKey: []byte(v)}}
	}
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   bool
	}{
		{"cluster-wide", &corev1.Secret{}, true},
		{"listed", scoped("ovn, openstack"), true},
		{"not listed", scoped("ovn"), false},
		{"an empty list, which cannot be parsed", scoped(""), true},
		{"an invalid entry", scoped("openstack,Not_A_Label"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayHold(tc.secret, "openstack"); got != tc.want {
				t.Errorf("mayHold = %v, want %v", got, tc.want)
			}
		})
	}
}
