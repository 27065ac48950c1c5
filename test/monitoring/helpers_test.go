package monitoring_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	// release and namespace of the renders; the metrics Service, and so
	// the scrape job the alerts filter on, is named after the release.
	release   = "anvil-operator"
	namespace = "anvil-system"
	// job is the job label prometheus-operator gives the operator's scrape:
	// the metrics Service's name.
	job = "anvil-operator-metrics"
	// runbookBase is the chart's default runbookBaseURL.
	runbookBase = "https://github.com/anvil/anvil/blob/main/docs/runbooks"
)

// monitoringValues turn on everything the monitoring section renders.
var monitoringValues = []string{
	"--set", "image.repository=registry.example/anvil/anvil-operator",
	"--set", "monitoring.prometheusRule.enabled=true",
	"--set", "monitoring.dashboard.enabled=true",
}

// repoRoot is the Anvil checkout: this module lives in test/monitoring.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helmTemplate renders the operator chart with the pinned helm binary
// ($ANVIL_BIN, else bin/ of the checkout), with Helm's home directories in
// a temporary directory so the user's configuration plays no part.
func helmTemplate(t *testing.T, args ...string) string {
	t.Helper()
	root := repoRoot(t)
	bin := os.Getenv("ANVIL_BIN")
	if bin == "" {
		bin = filepath.Join(root, "bin")
	}
	home := t.TempDir()
	full := append([]string{"template", release, "charts/anvil-operator", "--namespace", namespace}, args...)
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "helm"), full...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(full, " "), err, errOut.String())
	}
	return out.String()
}

// object is one rendered manifest.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec yaml.Node         `yaml:"spec"`
	Data map[string]string `yaml:"data"`
}

// objects decodes helm's multi-document output, skipping empty documents.
func objects(t *testing.T, manifest string) []object {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	var out []object
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding the rendered manifest: %v", err)
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
}

// ofKind returns the rendered objects of a kind.
func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}
