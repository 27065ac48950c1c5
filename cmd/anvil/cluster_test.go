package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// runAnvil executes the root command with args and returns its output and
// error.
func runAnvil(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func TestClusterRegisterFlags(t *testing.T) {
	// A kubeconfig with one context, so that only the missing one fails.
	kc := clientcmdapi.NewConfig()
	kc.Clusters["mgmt"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["mgmt"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["mgmt"] = &clientcmdapi.Context{Cluster: "mgmt", AuthInfo: "mgmt"}
	kc.CurrentContext = "mgmt"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")

	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{
			name:    "context and name are required",
			args:    []string{"cluster", "register"},
			wantErr: []string{`"context"`, `"name"`},
		},
		{
			name:    "flags are checked before any kubeconfig is read",
			args:    []string{"cluster", "register", "--kubeconfig", missing, "--context", "c", "--name", "Compute_A", "--namespaces", "openstack,"},
			wantErr: []string{"--name", "--namespaces"},
		},
		{
			name:    "non-positive timeout",
			args:    []string{"cluster", "register", "--kubeconfig", missing, "--context", "c", "--name", "compute-a", "--timeout", "0s"},
			wantErr: []string{"--timeout"},
		},
		{
			name:    "unknown compute context",
			args:    []string{"cluster", "register", "--kubeconfig", path, "--context", "compute-z", "--name", "compute-a"},
			wantErr: []string{"compute cluster", "compute-z"},
		},
		{
			name:    "unknown management context",
			args:    []string{"cluster", "register", "--kubeconfig", path, "--context", "mgmt", "--management-context", "mgmt-z", "--name", "compute-a"},
			wantErr: []string{"management cluster", "mgmt-z"},
		},
		{
			name:    "no positional arguments",
			args:    []string{"cluster", "register", "compute-a"},
			wantErr: []string{"unknown command"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runAnvil(t, tt.args...)
			if err == nil {
				t.Fatal("the command succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestClusterCommandListsRegister(t *testing.T) {
	out, err := runAnvil(t, "cluster", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "register") {
		t.Errorf("cluster --help does not list register:\n%s", out)
	}
	out, err = runAnvil(t, "cluster", "register", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--context", "--name", "--namespaces", "--kubeconfig", "--management-context", "--clusters-namespace", "--access-namespace", "--service-account", "--timeout"} {
		if !strings.Contains(out, flag) {
			t.Errorf("register --help does not document %s", flag)
		}
	}
}
