package sharedbuild

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/mod/modfile"
)

// parse reads go.mod text, failing the test on a syntax error.
func parse(t *testing.T, name, text string) *modfile.File {
	t.Helper()
	f, err := modfile.Parse(name, []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestMismatches(t *testing.T) {
	anvil := parse(t, "anvil", `module example.com/anvil
require (
	example.com/a v1.0.0
	example.com/b v1.2.0
	k8s.io/api v0.37.2
	example.com/only-anvil v1.0.0
)
`)
	for _, tc := range []struct {
		name  string
		tools string
		want  []string
	}{
		{"same versions", "require (\n\texample.com/a v1.0.0\n\texample.com/b v1.2.0 // indirect\n\texample.com/only-tools v1.9.0\n)\n", nil},
		{"one behind", "require (\n\texample.com/a v0.9.0\n\texample.com/b v1.2.0\n)\n",
			[]string{"example.com/a: Anvil requires v1.0.0, the tools v0.9.0"}},
		{"replaced at the required version", "require k8s.io/api v0.37.2\nreplace k8s.io/api => k8s.io/api v0.37.2\n", nil},
		{"replaced by a local path", "require example.com/a v1.0.0\nreplace example.com/a => ../a\n", nil},
		{"replaced at another version", "require k8s.io/api v0.37.0\nreplace k8s.io/api => k8s.io/api v0.37.2\n",
			[]string{"k8s.io/api: Anvil requires v0.37.2, the tools v0.37.0", "k8s.io/api: the tools require v0.37.0 but replace it with v0.37.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := parse(t, "tools", "module example.com/tools\n"+tc.tools)
			if got := Mismatches(anvil, tools); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestToolsShareAnvilsVersions reads the repository's two go.mod files.
func TestToolsShareAnvilsVersions(t *testing.T) {
	read := func(path string) *modfile.File {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		return parse(t, path, string(data))
	}
	anvil, tools := read("go.mod"), read("hack/tools/kube/go.mod")
	for _, m := range Mismatches(anvil, tools) {
		t.Errorf("%s; align hack/tools/kube/go.mod (go get mod@version there), so that shared packages compile once", m)
	}
}
