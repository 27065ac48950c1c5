// Package charts_test renders Anvil's Helm charts with the pinned helm binary
// and checks the objects they produce. The tests start no cluster, so they
// run with the unit tests, -short included.
package charts_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// releaseNamespace is the namespace every test installs into, the one the
// guide uses.
const releaseNamespace = "c5c3-access"

// repoRoot is the Anvil checkout the tests render charts from.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helm runs the pinned helm binary with args from the repository root and
// returns its standard output and standard error. Helm's home directories
// point into a temporary directory so that the tests neither read nor write
// the user's Helm configuration.
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := repoRoot(t)
	bin := os.Getenv("ANVIL_BIN")
	if bin == "" {
		bin = filepath.Join(root, "bin")
	}
	path := filepath.Join(bin, "helm")
	if _, statErr := os.Stat(path); statErr != nil {
		t.Fatalf("helm is missing from %s; run make tools", bin)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), path, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// decode splits helm's multi-document output into objects, skipping
// documents that hold only comments.
func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading the rendered manifest: %v", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("decoding a rendered document: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}
