package devstack

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fakeJWT is a token of the shape the apiserver issues, with only an exp
// claim and no valid signature.
func fakeJWT(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + "." + enc([]byte("sig"))
}

func registrationKubeconfig(t *testing.T, server string, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = user
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "ctx"
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestTokenRegistrationValid(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	server := "https://127.0.0.1:32001"
	valid := fakeJWT(fmt.Sprintf(`{"exp":%d}`, now.Add(48*time.Hour).Unix()))
	cases := []struct {
		name       string
		kubeconfig []byte
		server     string
		want       bool
	}{
		{"a token good past the renewal time", registrationKubeconfig(t, server, &clientcmdapi.AuthInfo{Token: valid}), server, true},
		{"the same server with a trailing slash", registrationKubeconfig(t, server+"/", &clientcmdapi.AuthInfo{Token: valid}), server, true},
		{"a token expiring before the renewal time",
			registrationKubeconfig(t, server, &clientcmdapi.AuthInfo{Token: fakeJWT(fmt.Sprintf(`{"exp":%d}`, now.Add(time.Hour).Unix()))}), server, false},
		{"another server", registrationKubeconfig(t, "https://127.0.0.1:32002", &clientcmdapi.AuthInfo{Token: valid}), server, false},
		{"a client certificate, as older devstacks wrote",
			registrationKubeconfig(t, server, &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKeyData: []byte("k")}), server, false},
		{"a token without an exp claim", registrationKubeconfig(t, server, &clientcmdapi.AuthInfo{Token: fakeJWT(`{"sub":"x"}`)}), server, false},
		{"a token that is no JWT", registrationKubeconfig(t, server, &clientcmdapi.AuthInfo{Token: "opaque"}), server, false},
		{"no kubeconfig", nil, server, false},
		{"garbage", []byte("{"), server, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := tokenRegistrationValid(c.kubeconfig, c.server, now.Add(tokenRenewal)); got != c.want {
				t.Fatalf("tokenRegistrationValid = %v, want %v", got, c.want)
			}
		})
	}
}

func TestReleaseDeployed(t *testing.T) {
	cases := map[string]bool{
		`{"name":"target-cluster-access","info":{"status":"deployed"}}`: true,
		`{"info":{"status":"failed"}}`:                                  false,
		`{"info":{"status":"pending-install"}}`:                         false,
		`not json`:                                                      false,
		``:                                                              false,
	}
	for in, want := range cases {
		if got := releaseDeployed([]byte(in)); got != want {
			t.Errorf("releaseDeployed(%q) = %v, want %v", in, got, want)
		}
	}
}
