package targetcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The documented shell recipe, run on these inputs, printed these values;
// the fingerprint must stay what registrants can compute without Anvil.
func TestEndpointFingerprintMatchesTheShellRecipe(t *testing.T) {
	tests := []struct {
		server string
		ca     string
		want   string
	}{
		{server: "https://10.0.0.5:6443", ca: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", want: "d3c19f843247d82c"},
		{server: "https://127.0.0.1:6443", ca: "CA", want: "4eccd6ff7fa2bbb9"},
	}
	for _, tt := range tests {
		if got := EndpointFingerprint(tt.server, []byte(tt.ca)); got != tt.want {
			t.Errorf("EndpointFingerprint(%q) = %s, want %s", tt.server, got, tt.want)
		}
	}
	if EndpointFingerprint("https://a:1", []byte("X")) == EndpointFingerprint("https://a:1", []byte("Y")) {
		t.Error("a changed CA keeps the fingerprint")
	}
}

func TestDecideEndpoint(t *testing.T) {
	const old, next, later = "1111111111111111", "2222222222222222", "3333333333333333"
	tests := []struct {
		name                       string
		pinned, endpoint, accepted string
		want                       EndpointDecision
	}{
		{name: "first engagement is trusted", endpoint: next, want: EndpointFirst},
		{name: "first engagement ignores an annotation", endpoint: next, accepted: old, want: EndpointFirst},
		{name: "token rotation needs no annotation", pinned: old, endpoint: old, want: EndpointUnchanged},
		{name: "unchanged with a stale annotation", pinned: old, endpoint: old, accepted: later, want: EndpointUnchanged},
		{name: "changed without annotation", pinned: old, endpoint: next, want: EndpointChangeRefused},
		{name: "changed with the matching annotation", pinned: old, endpoint: next, accepted: next, want: EndpointChangeAccepted},
		{name: "annotation in upper case with spaces", pinned: old, endpoint: "abcdef0123456789", accepted: " ABCDEF0123456789\n", want: EndpointChangeAccepted},
		{name: "a stale annotation does not approve a later change", pinned: next, endpoint: later, accepted: next, want: EndpointChangeRefused},
		{name: "the old endpoint as annotation", pinned: old, endpoint: next, accepted: old, want: EndpointChangeRefused},
		{name: "a prefix of the fingerprint", pinned: old, endpoint: next, accepted: next[:8], want: EndpointChangeRefused},
		{name: "an empty annotation", pinned: old, endpoint: next, accepted: " ", want: EndpointChangeRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideEndpoint(tt.pinned, tt.endpoint, tt.accepted); got != tt.want {
				t.Errorf("DecideEndpoint(%q, %q, %q) = %s, want %s", tt.pinned, tt.endpoint, tt.accepted, got, tt.want)
			}
		})
	}
}

// The fingerprint is of the current context's cluster only, and a token
// rotation keeps it while changing the hash.
func TestParseRegistrationEndpoint(t *testing.T) {
	parse := func(kubeconfig []byte, annotations map[string]string) *Registration {
		t.Helper()
		reg, err := ParseRegistration(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Data:       map[string][]byte{KubeconfigKey: kubeconfig},
		})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	base := parse(kubeconfigWith(t, nil), nil)
	if base.Endpoint != EndpointFingerprint("https://127.0.0.1:6443", []byte("CA")) {
		t.Errorf("endpoint = %q", base.Endpoint)
	}
	rotated := parse(kubeconfigWith(t, func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Token = "another-token" }), nil)
	if rotated.Endpoint != base.Endpoint || rotated.Hash == base.Hash {
		t.Error("a token rotation must keep the endpoint and change the hash")
	}
	other := parse(kubeconfigWith(t, func(kc *clientcmdapi.Config) {
		kc.Clusters["unused"] = &clientcmdapi.Cluster{Server: "https://10.9.9.9:6443", CertificateAuthorityData: []byte("OTHER")}
	}), nil)
	if other.Endpoint != base.Endpoint {
		t.Error("a cluster entry outside the current context changed the endpoint")
	}
	moved := parse(kubeconfigWith(t, func(kc *clientcmdapi.Config) { kc.Clusters["c"].Server = "https://10.9.9.9:6443" }), nil)
	if moved.Endpoint == base.Endpoint {
		t.Errorf("a moved server kept endpoint %q", moved.Endpoint)
	}
	err := endpointChangeRefusal("c5c3-clusters", "compute-a")
	if msg := err.Error(); strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, AcceptEndpointAnnotation("compute-a")) ||
		!strings.Contains(msg, "Namespace c5c3-clusters") {
		t.Errorf("refusal %q must name the annotation and its Namespace, and no endpoint", err)
	}
}
