package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novadb"
)

func TestPoolHosts(t *testing.T) {
	local := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "pool-a"}}
	local.Status.Nodes = []novav1alpha1.NovaComputeNode{
		{Name: "hv1", Phase: novav1alpha1.NodeActive, Zone: "az1"},
		{Name: "hv2", Phase: novav1alpha1.NodeConflict},
	}
	placed := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "pool-b"}}
	placed.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-b"}
	placed.Status.Nodes = []novav1alpha1.NovaComputeNode{{Name: "hv2", Phase: novav1alpha1.NodeDraining, Zone: "az2"}}

	got := poolHosts([]novav1alpha1.NovaCompute{local, placed})
	want := map[string]poolHost{
		"hv1": {pool: "pool-a", cluster: managementCluster, zone: "az1"},
		"hv2": {pool: "pool-b", cluster: "compute-b", zone: "az2"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for h, w := range want {
		if got[h] != w {
			t.Errorf("host %s: got %+v, want %+v", h, got[h], w)
		}
	}
}

func TestRenderTable(t *testing.T) {
	pools := map[string]poolHost{"hv1": {pool: "pool-a", cluster: "compute-a", zone: "az1"}, "hv2": {pool: "pool-a", cluster: "compute-a", zone: "az2"}}
	tests := []struct {
		name     string
		counts   map[string]int32
		services map[string]novadb.Service
		want     []string // lines, each compared with its spaces squeezed
		wantNot  []string
	}{
		{
			name:     "the worst host leads and fills the commands",
			counts:   map[string]int32{"hv1": 0, "hv2": 4, "other": 1},
			services: map[string]novadb.Service{"hv1": {}, "hv2": {Disabled: true, DisabledReason: "builds fail"}, "gone": {}},
			want: []string{
				"HOST FAILED_BUILDS POOL CLUSTER DISABLED",
				"hv2 4 pool-a compute-a yes (builds fail)",
				"other 1 - - -",
				"hv1 0 pool-a compute-a no",
				"gone - - - no",
				`openstack compute service set --disable --disable-reason "builds fail" hv2 nova-compute`,
				"openstack compute service set --enable hv2 nova-compute",
				"--availability-zone az2:hv2 --wait",
			},
		},
		{
			name:     "no failures leave placeholders",
			counts:   map[string]int32{"hv1": 0},
			services: map[string]novadb.Service{"hv1": {Disabled: true}},
			want:     []string{"hv1 0 pool-a compute-a yes", "--availability-zone <zone>:<host> --wait"},
			wantNot:  []string{"hv1 nova-compute"},
		},
		{
			name:    "an empty cell still prints the header",
			want:    []string{"HOST FAILED_BUILDS POOL CLUSTER DISABLED", "<host> nova-compute"},
			wantNot: []string{"pool-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := renderTable(&buf, buildRows(tt.counts, tt.services, pools)); err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, l := range strings.Split(buf.String(), "\n") {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
			out := strings.Join(lines, "\n")
			last := -1
			for _, w := range tt.want {
				i := strings.Index(out, w)
				if i < 0 {
					t.Fatalf("output lacks %q:\n%s", w, buf.String())
				}
				if i < last {
					t.Errorf("%q is out of order:\n%s", w, buf.String())
				}
				last = i
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, buf.String())
				}
			}
		})
	}
}

// secretReader serves one database Secret.
type secretReader struct{}

func (secretReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	obj.(*corev1.Secret).Data = map[string][]byte{"username": []byte("nova"), "password": []byte("pw-never-printed")}
	return nil
}

func (secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func TestCellConfigAddress(t *testing.T) {
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Namespace: "openstack", Name: "nova"}}
	nova.Spec.Database = &novav1alpha1.DatabaseSpec{Host: "mariadb.openstack.svc", Port: 3306, Database: "nova",
		SecretRef: novav1alpha1.DatabaseSecretRef{Name: "nova-db"}}
	tests := []struct {
		address  string
		wantHost string
		wantPort int32
		wantErr  bool
	}{
		{address: "", wantHost: "mariadb.openstack.svc", wantPort: 3306},
		{address: "127.0.0.1:13306", wantHost: "127.0.0.1", wantPort: 13306},
		{address: "[::1]:3307", wantHost: "::1", wantPort: 3307},
		{address: "127.0.0.1", wantErr: true},
		{address: ":3306", wantErr: true},
		{address: "db:0", wantErr: true},
		{address: "db:70000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			cfg, err := cellConfig(t.Context(), secretReader{}, nova, tt.address)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), "pw-never-printed") {
					t.Errorf("error %q carries the password", err)
				}
				return
			}
			if cfg.Host != tt.wantHost || cfg.Port != tt.wantPort || cfg.Username != "nova" {
				t.Errorf("got %s@%s:%d, want nova@%s:%d", cfg.Username, cfg.Host, cfg.Port, tt.wantHost, tt.wantPort)
			}
		})
	}
}

func TestFailedBuildsFlags(t *testing.T) {
	out, err := runAnvil(t, "diagnose", "failed-builds", "--timeout", "0s")
	if err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("a zero timeout: %v, %s", err, out)
	}
	if _, err := runAnvil(t, "diagnose", "failed-builds", "extra"); err == nil {
		t.Error("a positional argument was accepted")
	}
}
