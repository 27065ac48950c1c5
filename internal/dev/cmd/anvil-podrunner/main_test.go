package main

import (
	"flag"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/anvil/anvil/internal/dev/podrunner"
)

func TestParseFlags(t *testing.T) {
	zone := newNode
	tests := []struct {
		name    string
		args    []string
		want    []podrunner.Node
		wantErr bool
	}{
		{
			name: "nodes list with zones",
			args: []string{"--kubeconfig=k", "--state-dir=s", "--nodes", "n1=zone-1, n2=zone-2"},
			want: []podrunner.Node{zone("n1", "zone-1"), zone("n2", "zone-2")},
		},
		{
			name: "node without zone in the list",
			args: []string{"--kubeconfig=k", "--state-dir=s", "--nodes", "n1"},
			want: []podrunner.Node{zone("n1", "")},
		},
		{
			name: "repeated node and zone",
			args: []string{"--kubeconfig=k", "--state-dir=s", "--node", "a", "--zone", "z1", "--node", "b"},
			want: []podrunner.Node{zone("a", "z1"), zone("b", "")},
		},
		{
			name: "list first, then repeated",
			args: []string{"--kubeconfig=k", "--state-dir=s", "--node", "b", "--zone", "z2", "--nodes", "a=z1"},
			want: []podrunner.Node{zone("a", "z1"), zone("b", "z2")},
		},
		{name: "zone before any node", args: []string{"--kubeconfig=k", "--state-dir=s", "--zone", "z", "--node", "a"}, wantErr: true},
		{name: "two zones for one node", args: []string{"--kubeconfig=k", "--state-dir=s", "--node", "a", "--zone", "z", "--zone", "y"}, wantErr: true},
		{name: "empty zone in the list", args: []string{"--kubeconfig=k", "--state-dir=s", "--nodes", "a="}, wantErr: true},
		{name: "no nodes", args: []string{"--kubeconfig=k", "--state-dir=s"}, wantErr: true},
		{name: "no state dir", args: []string{"--kubeconfig=k", "--nodes", "a"}, wantErr: true},
		{name: "stray argument", args: []string{"--kubeconfig=k", "--state-dir=s", "--nodes", "a", "extra"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfg, err := parseFlags(fs, tt.args)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", cfg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.nodes, tt.want) {
				t.Errorf("nodes = %+v, want %+v", cfg.nodes, tt.want)
			}
		})
	}
}

func TestParseFlagsPassEnv(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg, err := parseFlags(fs, []string{"--kubeconfig=k", "--state-dir=s", "--nodes=a", "--pass-env", "A, B", "--pass-env", "C"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A", "B", "C"}; !reflect.DeepEqual(cfg.passEnv, want) {
		t.Errorf("passEnv = %v, want %v", cfg.passEnv, want)
	}
}

// TestRunNovaControlPlane checks that the flag puts the control-plane
// mappings in front of the default ones, and that without it the runner
// keeps its default map, which simulates those pods.
func TestRunNovaControlPlane(t *testing.T) {
	api := &corev1.Container{
		Name:    "nova-api",
		Image:   "ghcr.io/c5c3/nova:2026.1",
		Command: []string{"uwsgi", "--http-socket", ":8774", "--wsgi-file", "/usr/bin/nova-api-wsgi"},
	}
	manage := &corev1.Container{Name: "db-sync", Image: "ghcr.io/c5c3/nova:2026.1", Command: []string{"nova-manage", "db", "sync"}}
	for _, tt := range []struct {
		args    []string
		wantAPI string
	}{
		{nil, ""},
		{[]string{"--run-nova-control-plane"}, "nova-api"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg, err := parseFlags(fs, append([]string{"--kubeconfig=k", "--state-dir=s", "--nodes=a"}, tt.args...))
		if err != nil {
			t.Fatal(err)
		}
		images := cfg.images()
		if images == nil {
			images = podrunner.DefaultImageMap()
		}
		got := ""
		if m, ok := images.Lookup(api); ok {
			got = m.Name
		}
		if got != tt.wantAPI {
			t.Errorf("%v: nova-api maps to %q, want %q", tt.args, got, tt.wantAPI)
		}
		if m, ok := images.Lookup(manage); !ok || m.Name != "nova-manage" {
			t.Errorf("%v: nova-manage maps to %q, %v", tt.args, m.Name, ok)
		}
	}
}

// TestRunOVN checks that --run-ovn adds the OVN mappings, alone or beside
// the Nova control plane, and that --forward-node-ports reaches the
// runner's option.
func TestRunOVN(t *testing.T) {
	member := &corev1.Container{Name: "ovsdb-server", Env: []corev1.EnvVar{{Name: "OVN_DB", Value: "nb"}}}
	api := &corev1.Container{
		Name:    "nova-api",
		Image:   "ghcr.io/c5c3/nova:2026.1",
		Command: []string{"uwsgi", "--http-socket", ":8774", "--wsgi-file", "/usr/bin/nova-api-wsgi"},
	}
	for _, tt := range []struct {
		args             []string
		wantOVN, wantAPI bool
		wantForwardPorts bool
	}{
		{nil, false, false, false},
		{[]string{"--run-ovn"}, true, false, false},
		{[]string{"--run-ovn", "--run-nova-control-plane", "--forward-node-ports"}, true, true, true},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cfg, err := parseFlags(fs, append([]string{"--kubeconfig=k", "--state-dir=s", "--nodes=a"}, tt.args...))
		if err != nil {
			t.Fatal(err)
		}
		images := cfg.images()
		if images == nil {
			images = podrunner.DefaultImageMap()
		}
		if _, ok := images.Lookup(member); ok != tt.wantOVN {
			t.Errorf("%v: central member mapped = %v, want %v", tt.args, ok, tt.wantOVN)
		}
		if _, ok := images.Lookup(api); ok != tt.wantAPI {
			t.Errorf("%v: nova-api mapped = %v, want %v", tt.args, ok, tt.wantAPI)
		}
		if cfg.forwardNodePorts != tt.wantForwardPorts {
			t.Errorf("%v: forwardNodePorts = %v", tt.args, cfg.forwardNodePorts)
		}
	}
}

func TestParseFlagsMetadataAgentNodes(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg, err := parseFlags(fs, []string{"--kubeconfig=k", "--state-dir=s", "--nodes=a,b", "--metadata-agent-nodes", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.nodes[0].NetNS || !cfg.nodes[1].NetNS {
		t.Errorf("nodes = %+v; want only b with a namespace", cfg.nodes)
	}
	if m, ok := cfg.images().Lookup(&corev1.Container{Name: "metadata-agent"}); !ok || m.Name != "neutron-ovn-metadata-agent" {
		t.Errorf("the agent's container maps to %q, %v", m.Name, ok)
	}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseFlags(fs, []string{"--kubeconfig=k", "--state-dir=s", "--nodes=a", "--metadata-agent-nodes=c"}); err == nil {
		t.Error("an unknown node is accepted")
	}
}

func TestParseFlagsHostAlias(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg, err := parseFlags(fs, []string{"--kubeconfig=k", "--state-dir=s", "--nodes=a",
		"--host-alias=Nova-Metadata.127-0-0-1.nip.io=127.0.0.1", "--host-alias", "other.test=::1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.hostAliases["nova-metadata.127-0-0-1.nip.io"]; got.String() != "127.0.0.1" {
		t.Errorf("the alias resolves to %v", got)
	}
	if got := cfg.hostAliases["other.test"]; got.String() != "::1" {
		t.Errorf("the second alias resolves to %v", got)
	}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseFlags(fs, []string{"--kubeconfig=k", "--state-dir=s", "--nodes=a", "--host-alias=name-only"}); err == nil {
		t.Error("an alias without an address is accepted")
	}
}
