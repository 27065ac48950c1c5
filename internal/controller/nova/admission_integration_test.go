package nova_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/util/retry"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// Every admission rule of the Nova, CEL and webhook alike, rejects with its
// message and names the field; a valid Nova is admitted with its defaults.
func TestIntegrationNovaAdmission(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()

	tests := []struct {
		name   string
		mutate func(*novav1alpha1.Nova)
		want   []string
	}{
		{name: "remoteCompute without TLS", mutate: func(n *novav1alpha1.Nova) { n.Spec.Messaging.TLS = nil },
			want: []string{"remoteCompute requires messaging.tls: a compute on another cluster verifies the broker against the messaging CA bundle"}},
		{name: "remote Keystone over http", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "http://keystone.example.com" },
			want: []string{"spec.remoteCompute.keystoneEndpoint"}},
		{name: "remote Keystone without host", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "https://" },
			want: []string{"spec.remoteCompute.keystoneEndpoint", "must name a host"}},
		{name: "remote Keystone with a newline", mutate: func(n *novav1alpha1.Nova) {
			n.Spec.RemoteCompute.KeystoneEndpoint = "https://keystone.example.com\nfoo"
		}, want: []string{"spec.remoteCompute.keystoneEndpoint", "single line"}},
		{name: "remote Keystone empty", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "" },
			want: []string{"spec.remoteCompute.keystoneEndpoint"}},
		{name: "transport Secret unnamed", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.TransportURLSecretRef.Name = "" },
			want: []string{"spec.remoteCompute.transportURLSecretRef.name"}},
		{name: "release pattern", mutate: func(n *novav1alpha1.Nova) { n.Spec.OpenStackRelease = "dalmatian" },
			want: []string{"spec.openStackRelease"}},
		{name: "tag and digest", mutate: func(n *novav1alpha1.Nova) {
			n.Spec.Image.Digest = "sha256:" + strings.Repeat("a", 64)
		}, want: []string{"image: set exactly one of tag or digest"}},
		{name: "Keystone without scheme", mutate: func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = "keystone:5000" },
			want: []string{"spec.keystoneEndpoint"}},
		{name: "Keystone on a host the operator does not admit", mutate: func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = "http://10.0.0.7:5000/v3" },
			want: []string{"spec.keystoneEndpoint: Forbidden", "host 10.0.0.7:5000 is not allowed", "--allowed-keystone-hosts"}},
		{name: "name too long", mutate: func(n *novav1alpha1.Nova) { n.Name = strings.Repeat("n", 42) },
			want: []string{"metadata.name must be at most 41 characters"}},
		{name: "reserved suffix", mutate: func(n *novav1alpha1.Nova) { n.Name = "cloud-api" },
			want: []string{"metadata.name must not end in -api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNova("adm")
			tt.mutate(n)
			err := e.Management.Client.Create(ctx, n)
			if err == nil {
				t.Fatal("admitted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	// A valid Nova is admitted, with the defaults filled in.
	n := newNova("adm-valid")
	if err := e.Management.Client.Create(ctx, n); err != nil {
		t.Fatalf("a valid Nova was refused: %v", err)
	}
	got := getNova(t, "adm-valid")
	if got.Spec.RemoteCompute.TransportURLSecretRef.Key != "transport_url" || got.Spec.Messaging.SecretRef.Key != "transport_url" ||
		got.Spec.ServiceUser.Username != "nova" || got.Spec.ServiceUser.ProjectName != "service" ||
		got.Spec.ServiceUser.SecretRef.Key != "password" || got.Spec.Metadata.SharedSecretRef.Key != "shared_secret" ||
		got.Spec.Messaging.TLS.CABundleSecretRef.Key != "ca.crt" {
		t.Errorf("defaults not applied: %+v", got.Spec)
	}

	// targetClusterRef cannot be added after creation; other fields change.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		placed := getNova(t, "adm-valid")
		placed.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
		return e.Management.Client.Update(ctx, placed)
	})
	if err == nil || !strings.Contains(err.Error(), "targetClusterRef is immutable") {
		t.Errorf("adding targetClusterRef: err = %v", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := getNova(t, "adm-valid")
		fresh.Spec.Region = "changed"
		return e.Management.Client.Update(ctx, fresh)
	})
	if err != nil {
		t.Fatalf("an ordinary update was refused: %v", err)
	}
}
