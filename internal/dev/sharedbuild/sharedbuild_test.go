package sharedbuild

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	mod := []byte(`module example.com/tools

go 1.26.0

require example.com/one v1.0.0

require (
	example.com/two v0.2.0 // indirect
	k8s.io/api v0.37.0
)

replace (
	k8s.io/api => k8s.io/api v0.37.2
	example.com/local => ../local
)

replace example.com/three v1.0.0 => example.com/three v1.1.0
`)
	got, err := Parse(mod)
	if err != nil {
		t.Fatal(err)
	}
	wantReq := map[string]string{"example.com/one": "v1.0.0", "example.com/two": "v0.2.0", "k8s.io/api": "v0.37.0"}
	wantRep := map[string]string{"k8s.io/api": "v0.37.2", "example.com/three": "v1.1.0"}
	if len(got.Require) != len(wantReq) || len(got.Replace) != len(wantRep) {
		t.Fatalf("got %v and %v, want %v and %v", got.Require, got.Replace, wantReq, wantRep)
	}
	for k, v := range wantReq {
		if got.Require[k] != v {
			t.Errorf("require %s = %q, want %q", k, got.Require[k], v)
		}
	}
	for k, v := range wantRep {
		if got.Replace[k] != v {
			t.Errorf("replace %s = %q, want %q", k, got.Replace[k], v)
		}
	}
	if _, err := Parse([]byte("require (\n\texample.com/broken\n)\n")); err == nil {
		t.Error("a require without a version parsed")
	}
}

func TestMismatches(t *testing.T) {
	anvil := GoMod{Require: map[string]string{"a": "v1", "b": "v2", "k8s.io/api": "v0.37.2", "only-anvil": "v1"}}
	for _, tc := range []struct {
		name  string
		tools GoMod
		want  []string
	}{
		{"same versions", GoMod{Require: map[string]string{"a": "v1", "b": "v2", "only-tools": "v9"}}, nil},
		{"one behind", GoMod{Require: map[string]string{"a": "v0", "b": "v2"}},
			[]string{"a: Anvil requires v1, the tools v0"}},
		{"replaced at the required version", GoMod{
			Require: map[string]string{"k8s.io/api": "v0.37.2"}, Replace: map[string]string{"k8s.io/api": "v0.37.2"}}, nil},
		{"replaced at another version", GoMod{
			Require: map[string]string{"k8s.io/api": "v0.37.0"}, Replace: map[string]string{"k8s.io/api": "v0.37.2"}},
			[]string{"k8s.io/api: Anvil requires v0.37.2, the tools v0.37.0", "k8s.io/api: the tools require v0.37.0 but replace it with v0.37.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mismatches(anvil, tc.tools); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestToolsShareAnvilsVersions reads the repository's two go.mod files.
func TestToolsShareAnvilsVersions(t *testing.T) {
	read := func(path string) GoMod {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m
	}
	anvil, tools := read("go.mod"), read("hack/tools/kube/go.mod")
	if len(anvil.Require) < 20 || len(tools.Require) < 20 {
		t.Fatalf("read %d and %d requirements; the parser missed the files' blocks", len(anvil.Require), len(tools.Require))
	}
	for _, m := range Mismatches(anvil, tools) {
		t.Errorf("%s; align hack/tools/kube/go.mod (go get mod@version there), so that shared packages compile once", m)
	}
}
