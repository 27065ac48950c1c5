package targetcluster

import (
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fuzzToken is the token every seed carries; no refusal may quote it.
const fuzzToken = "s3cr3t-token"

// FuzzParseRegistration feeds arbitrary kubeconfigs and namespace lists to
// the registration policy. It must never panic, must never quote the token
// in a refusal, and must accept only what CheckKubeconfig's rules allow:
// a current context whose cluster and user exist, every server on https
// with a host and no user info, and no plugin, file, proxy, unchecked TLS
// or impersonation anywhere.
func FuzzParseRegistration(f *testing.F) {
	for _, mutate := range []func(*clientcmdapi.Config){
		nil,
		func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "sh"} },
		func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].TokenFile = "/etc/token" },
		func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Impersonate = "admin" },
		func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "http://127.0.0.1:6443" },
		func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "https://u:" + fuzzToken + "@127.0.0.1:6443" },
		func(kc *clientcmdapi.Config) { kc.Clusters["c"].ProxyURL = "http://proxy:3128" },
		func(kc *clientcmdapi.Config) { kc.Clusters["c"].InsecureSkipTLSVerify = true },
		func(kc *clientcmdapi.Config) { kc.Clusters["c"].CertificateAuthority = "/etc/ca.crt" },
		func(kc *clientcmdapi.Config) { kc.CurrentContext = "missing" },
	} {
		f.Add(kubeconfigWith(f, mutate), "openstack, c5c3-access", true)
	}
	f.Add([]byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\nclusters:\n- name: c\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), "", false)
	f.Fuzz(func(t *testing.T, kubeconfig []byte, namespaces string, scoped bool) {
		s := &corev1.Secret{Data: map[string][]byte{KubeconfigKey: kubeconfig}}
		if scoped {
			s.Data[NamespacesKey] = []byte(namespaces)
		}
		reg, err := ParseRegistration(s)
		if err != nil {
			if _, ok := IsRefusal(err); !ok {
				t.Fatalf("error %v is no RefusalError", err)
			}
			if strings.Contains(err.Error(), fuzzToken) && !nameHolds(kubeconfig) {
				r, _ := IsRefusal(err)
				t.Fatalf("a %s refusal quotes the token", r.Reason)
			}
			return
		}
		checkAccepted(t, reg.Kubeconfig)
		if scoped && len(reg.Namespaces) == 0 {
			t.Fatalf("a scoped registration has no namespace")
		}
	})
}

// nameHolds tells whether the token might stand in a name, which a refusal
// quotes on purpose; the fuzzer can move it there.
func nameHolds(kubeconfig []byte) bool {
	return strings.Count(string(kubeconfig), fuzzToken) > 1 || !strings.Contains(string(kubeconfig), "token: "+fuzzToken)
}

// checkAccepted restates CheckKubeconfig's rules on a kubeconfig it passed.
func checkAccepted(t *testing.T, kc *clientcmdapi.Config) {
	t.Helper()
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("accepted a current context without its cluster or user")
	}
	for name, u := range kc.AuthInfos {
		if u.Exec != nil || u.AuthProvider != nil || u.TokenFile != "" || u.ClientCertificate != "" ||
			u.ClientKey != "" || u.Impersonate != "" || len(u.ImpersonateGroups) > 0 {
			t.Fatalf("accepted user %q with a plugin, a file or impersonation", name)
		}
	}
	for name, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil ||
			c.ProxyURL != "" || c.InsecureSkipTLSVerify || c.CertificateAuthority != "" {
			t.Fatalf("accepted cluster %q with server %q, a proxy, unchecked TLS or a CA file", name, c.Server)
		}
	}
}
