package main

import (
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
)

// diagnoseKeystone is the Keystone host the test's Nova webhook admits.
const diagnoseKeystone = "keystone.openstack.svc"

// startNovaWebhook serves the Nova webhook, which the environment's
// apiserver calls on every Nova write.
func startNovaWebhook(t *testing.T, e *testenv.Environment) {
	t.Helper()
	mgr, err := e.NewManager(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := anvilwebhook.SetupNovaWebhook(mgr, keystonepolicy.Policy{AllowedHosts: []string{diagnoseKeystone}}); err != nil {
		t.Fatal(err)
	}
	if err := testenv.StartManager(mgr, nil); err != nil {
		t.Fatal(err)
	}
}

// diagnoseNova is a Nova whose cell database is on a closed port, so the
// command gets as far as dialling and no further.
func diagnoseNova(name string) *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.Messaging.SecretRef.Name = "bus"
	n.Spec.KeystoneEndpoint = "http://" + diagnoseKeystone + ":5000/v3"
	n.Spec.ServiceUser.SecretRef.Name = "nova-password"
	n.Spec.Metadata.SharedSecretRef.Name = "metadata"
	n.Spec.Database = &novav1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: 1, Database: "nova",
		SecretRef: novav1alpha1.DatabaseSecretRef{Name: name + "-db"}}
	return n
}

// The command finds the Nova through the kubeconfig, reads its database
// Secret and dials the database; every failure on the way is named, and
// neither the output nor the error ever carries the password.
func TestIntegrationDiagnoseFailedBuilds(t *testing.T) {
	e := testenv.Require(t, env)
	startNovaWebhook(t, e)
	kc := adminKubeconfig(t, e)
	m := e.Management
	const password = "diagnose-cell-password-7"
	base := []string{"diagnose", "failed-builds", "--kubeconfig", kc, "--context", m.Name, "-n", testenv.WorkloadNamespace, "--timeout", "20s"}

	if err := m.Client.Create(t.Context(), diagnoseNova("diag-a")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		before  func(t *testing.T)
		args    []string
		wantErr string
	}{
		{name: "the only Nova's Secret is missing", wantErr: "Secret " + testenv.WorkloadNamespace + "/diag-a-db"},
		{
			name: "the database is unreachable",
			before: func(t *testing.T) {
				m.PutSecret(t, testenv.WorkloadNamespace, "diag-a-db", map[string]string{"username": "nova", "password": password})
			},
			wantErr: "cell database: reading compute_nodes",
		},
		{
			name: "two Novas need --nova",
			before: func(t *testing.T) {
				if err := m.Client.Create(t.Context(), diagnoseNova("diag-b")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "pass --nova",
		},
		{name: "--nova picks one", args: []string{"--nova", "diag-a"}, wantErr: "cell database: reading compute_nodes"},
		{name: "an unknown Nova", args: []string{"--nova", "diag-c"}, wantErr: "diag-c"},
		{name: "--db-address replaces the spec's", args: []string{"--nova", "diag-a", "--db-address", "127.0.0.1:2"}, wantErr: "127.0.0.1:2"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before(t)
		}
		out, err := runAnvil(t, append(append([]string(nil), base...), s.args...)...)
		if err == nil || !strings.Contains(err.Error(), s.wantErr) {
			t.Errorf("%s: error = %v, want one containing %q; output:\n%s", s.name, err, s.wantErr, out)
		}
		if strings.Contains(out, password) || (err != nil && strings.Contains(err.Error(), password)) {
			t.Errorf("%s: the password reached the output or the error", s.name)
		}
	}
}
