package ociimage_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/anvil/anvil/internal/dev/ociimage"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// The image `make image` writes holds the real operator: its entrypoint is
// a static anvil-operator that runs, as nonroot. It compiles the operator
// (minutes on a cold cache), so it runs with the integration tests.
func TestIntegrationOperatorImage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: compiles the operator (run without -short)")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	a, err := ociimage.Build(t.Context(), ociimage.Options{
		Dir: root, Package: "./cmd/anvil-operator", Name: "anvil-operator",
		Platforms: []v1.Platform{ociimage.HostPlatform()}, WorkDir: t.TempDir(), Created: created,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != ociimage.NonRoot || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/anvil-operator" {
		t.Errorf("config user %q entrypoint %v", cfg.Config.User, cfg.Config.Entrypoint)
	}
	_, bodies := layerFiles(t, a.Image)
	bin := bodies["usr/local/bin/anvil-operator"]
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[cfg.Architecture]
	checkStatic(t, bin, machine)

	// The layer's binary is the operator: its flags are the operator's.
	path := filepath.Join(t.TempDir(), "anvil-operator")
	if err := os.WriteFile(path, bin, 0o700); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.CommandContext(t.Context(), path, "--help").CombinedOutput()
	for _, flag := range []string{"-leader-elect", "-health-probe-bind-address", "-webhook-port"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("--help of the image's binary lacks %s:\n%s", flag, out)
		}
	}
}

// The operator chart's default image.digest is the digest `make image`
// prints for this commit on this machine's platform, so a chart installed
// from a commit pulls exactly that commit's operator. It runs the command
// the chart's README names, with the same defaults.
func TestIntegrationChartPinsThisCommitsImage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: compiles the operator (run without -short)")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the chart pins the linux/amd64 image")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "run", "./internal/dev/cmd/anvil-image", "--output", filepath.Join(t.TempDir(), "layout"))
	cmd.Dir = root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SOURCE_DATE_EPOCH=") })
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("anvil-image: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		t.Fatal("anvil-image printed no digest")
	}
	built := lines[len(lines)-1]
	values, err := os.ReadFile(filepath.Join(root, "charts/anvil-operator/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), `digest: "`+built+`"`) {
		t.Errorf("charts/anvil-operator/values.yaml does not pin this commit's image %s; run make pin-image and commit values.yaml", built)
	}
}
