package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestEmbedded(t *testing.T) {
	tests := []struct {
		name    string
		cfg     rest.Config
		wantErr bool
	}{
		{name: "inline certificate", cfg: rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("crt"), KeyData: []byte("key")}}},
		{name: "inline token", cfg: rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}},
		{name: "CA file", cfg: rest.Config{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{CAFile: "/ca"}}, wantErr: true},
		{name: "certificate file", cfg: rest.Config{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{CertFile: "/c", KeyFile: "/k"}}, wantErr: true},
		{name: "token file", cfg: rest.Config{Host: "https://h", BearerTokenFile: "/t"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := Embedded("c1", &tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			kc, err := clientcmd.Load(raw)
			if err != nil {
				t.Fatal(err)
			}
			if kc.CurrentContext != "c1" || kc.Clusters["c1"].Server != tt.cfg.Host {
				t.Errorf("unexpected kubeconfig: %+v", kc)
			}
			if string(kc.Clusters["c1"].CertificateAuthorityData) != string(tt.cfg.CAData) {
				t.Errorf("CA not embedded")
			}
			if kc.AuthInfos["c1"].Token != tt.cfg.BearerToken || string(kc.AuthInfos["c1"].ClientKeyData) != string(tt.cfg.KeyData) {
				t.Errorf("credential not embedded")
			}
		})
	}
}

func TestFlattenInlinesFiles(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("CA"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "admin.crt"), []byte("CRT"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "admin.key"), []byte("KEY"), 0o600))
	kc := clientcmdapi.NewConfig()
	kc.Clusters["k"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", CertificateAuthority: filepath.Join(dir, "ca.crt")}
	kc.AuthInfos["k"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(dir, "admin.crt"), ClientKey: filepath.Join(dir, "admin.key")}
	kc.Contexts["k"] = &clientcmdapi.Context{Cluster: "k", AuthInfo: "k"}
	kc.CurrentContext = "k"
	path := filepath.Join(dir, "kubeconfig")
	must(clientcmd.WriteToFile(*kc, path))

	flat, err := Flatten(path)
	must(err)
	if c := flat.Clusters["k"]; c.CertificateAuthority != "" || string(c.CertificateAuthorityData) != "CA" {
		t.Errorf("CA not inlined: %+v", c)
	}
	if u := flat.AuthInfos["k"]; u.ClientCertificate != "" || u.ClientKey != "" || string(u.ClientCertificateData) != "CRT" || string(u.ClientKeyData) != "KEY" {
		t.Errorf("credentials not inlined: %+v", u)
	}
}

func TestMergeRenamesEveryEntry(t *testing.T) {
	mk := func(server string) *clientcmdapi.Config {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["kwok"] = &clientcmdapi.Cluster{Server: server}
		kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: server}
		kc.Contexts["kwok"] = &clientcmdapi.Context{Cluster: "kwok", AuthInfo: "admin"}
		kc.CurrentContext = "kwok"
		return kc
	}
	merged, err := Merge([]Entry{{Context: "anvil-mgmt", Config: mk("https://a")}, {Context: "anvil-compute-a", Config: mk("https://b")}})
	if err != nil {
		t.Fatal(err)
	}
	if merged.CurrentContext != "anvil-mgmt" {
		t.Errorf("current context = %q", merged.CurrentContext)
	}
	if merged.Clusters["anvil-compute-a"].Server != "https://b" || merged.AuthInfos["anvil-mgmt"].Token != "https://a" {
		t.Errorf("entries collided: %+v", merged)
	}
	single, err := Single(merged, "anvil-compute-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(single.Contexts) != 1 || single.Clusters["anvil-compute-a"].Server != "https://b" {
		t.Errorf("Single = %+v", single)
	}
	if _, err := Single(merged, "nope"); err == nil {
		t.Error("Single accepted an unknown context")
	}
	broken := mk("https://c")
	broken.CurrentContext = "missing"
	if _, err := Merge([]Entry{{Context: "x", Config: broken}}); err == nil {
		t.Error("Merge accepted a kubeconfig without its current context")
	}
}
