package devstack

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anvil/anvil/internal/dev/testenv"
)

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{testenv.ComputeClusterName(0), "compute-a"},
		{testenv.ComputeClusterName(1), "compute-b"},
		{NodeName("compute-a", 1), "compute-a-node-1"},
		{ZoneName("compute-b", 3), "compute-b-zone-3"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	root := t.TempDir()
	if _, err := New(Options{Root: root, ComputeClusters: 1}); err == nil {
		t.Error("New accepted a directory that is not an Anvil checkout")
	}
	if err := os.MkdirAll(filepath.Join(root, "hack", "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hack", "tools", "build.sh"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 27} {
		if _, err := New(Options{Root: root, ComputeClusters: n}); err == nil {
			t.Errorf("New accepted %d compute clusters", n)
		}
	}
	s, err := New(Options{Root: root, ComputeClusters: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.KubeconfigPath() != filepath.Join(root, ".devstack", "kubeconfig") {
		t.Errorf("kubeconfig path = %s", s.KubeconfigPath())
	}
	if got := s.clusterNames(); len(got) != 3 || got[0] != "mgmt" || got[2] != "compute-b" {
		t.Errorf("cluster names = %v", got)
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := &Stack{dir: t.TempDir()}
	st, err := s.loadState()
	if err != nil || len(st.Clusters) != 0 || st.Operator != nil {
		t.Fatalf("empty state = %+v, %v", st, err)
	}
	want := &state{Clusters: []string{"mgmt", "compute-a"}, Operator: &operatorState{PID: 42, HealthAddr: "127.0.0.1:1"}}
	if err := s.saveState(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.loadState()
	if err != nil || len(got.Clusters) != 2 || got.Operator.PID != 42 {
		t.Errorf("state = %+v, %v", got, err)
	}
}

func TestUnion(t *testing.T) {
	got := union([]string{"mgmt", "compute-a"}, []string{"compute-a", "stray"})
	if len(got) != 3 || got[2] != "stray" {
		t.Errorf("union = %v", got)
	}
}

func TestIndentPrefixesEveryLine(t *testing.T) {
	var buf bytes.Buffer
	w := indent(&buf)
	_, _ = w.Write([]byte("one\ntw"))
	_, _ = w.Write([]byte("o\n"))
	if got, want := buf.String(), "      | one\n      | two\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Error("the test process is not alive")
	}
	if processAlive(0) || processAlive(-1) {
		t.Error("invalid pids are alive")
	}
}

// A cluster's kwok-controller must leave the pod runner's nodes alone:
// kwokctl records the selector with the cluster, and a cluster recorded
// without it is recognised as one that manages every node.
func TestKwokManagesOnlyItsNodes(t *testing.T) {
	s := &Stack{dir: t.TempDir()}
	write := func(name, args string) {
		t.Helper()
		dir := filepath.Join(s.dir, "kwok", "clusters", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kwok.yaml"), []byte(args), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// kwokctl writes its own --manage-all-nodes=true first; the devstack's
	// extra args follow it and win.
	write("new", "- args:\n  - --manage-all-nodes=true\n  - --manage-all-nodes=false\n  - --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake\n")
	write("old", "- args:\n  - --manage-all-nodes=true\n")
	for name, want := range map[string]bool{"new": true, "old": false} {
		got, err := s.kwokManagesOnlyItsNodes(name)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: kwokManagesOnlyItsNodes = %v, want %v", name, got, want)
		}
	}
	if _, err := s.kwokManagesOnlyItsNodes("missing"); err == nil {
		t.Error("a cluster without a recorded configuration passed")
	}
	var extra []string
	for i := 0; i < len(kwokControllerArgs); i += 2 {
		extra = append(extra, kwokControllerArgs[i+1])
	}
	want := []string{"kwok-controller=manage-all-nodes=false", "kwok-controller=manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"}
	if !slices.Equal(extra, want) {
		t.Errorf("kwokctl extra args = %q, want %q", extra, want)
	}
}
