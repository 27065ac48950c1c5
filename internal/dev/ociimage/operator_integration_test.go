package ociimage_test

import (
	"debug/elf"
	"errors"
	"io/fs"
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
// prints for this commit, and any machine gets that digest: the test runs
// `make image` twice, here with the caller's Go settings, and in a copy of
// the sources at another path with a GOPATH (so a module cache) of its
// own, and wants the same digest from both and in values.yaml. With
// ANVIL_IMAGE_EMPTY_GOCACHE=1 (`make test-image`) the copy also gets an
// empty GOCACHE and compiles everything anew, which takes minutes of both
// cores; without it the copy shares the build cache, whose entries
// -trimpath keeps free of paths. A fresh machine's `make test` builds the
// first image from an empty cache anyway, against a pin made elsewhere.
func TestIntegrationChartPinsThisCommitsImage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: compiles the operator twice (run without -short)")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the chart pins the linux/amd64 image")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	here := makeImage(t, root, nil)

	// The copy fetches its modules from this machine's module cache, so
	// that it downloads nothing.
	modcache := goEnv(t, root, "GOMODCACHE")
	copyDir, scratch := filepath.Join(t.TempDir(), "elsewhere", "anvil"), t.TempDir()
	copySources(t, root, copyDir)
	env := []string{
		"GOPATH=" + filepath.Join(scratch, "gopath"), "GOMODCACHE=",
		"GOPROXY=file://" + filepath.Join(modcache, "cache", "download"), "GOSUMDB=off", "GOFLAGS=",
	}
	caches := "its own GOPATH"
	if os.Getenv("ANVIL_IMAGE_EMPTY_GOCACHE") == "1" {
		env = append(env, "GOCACHE="+filepath.Join(scratch, "gocache"))
		caches += " and an empty GOCACHE"
	}
	there := makeImage(t, copyDir, env)
	if here != there {
		t.Errorf("make image printed %s here and %s in a copy at another path with %s: the image depends on the machine", here, there, caches)
	}
	values, err := os.ReadFile(filepath.Join(root, "charts/anvil-operator/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), `digest: "`+here+`"`) {
		t.Errorf("charts/anvil-operator/values.yaml does not pin this commit's image %s; run make pin-image and commit values.yaml", here)
	}
}

// makeImage runs `make image` in dir, with env over the caller's
// environment and SOURCE_DATE_EPOCH unset as the chart's pin assumes, and
// returns the digest it printed.
func makeImage(t *testing.T, dir string, env []string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", "--no-print-directory", "image", "IMAGE_OUTPUT="+filepath.Join(t.TempDir(), "layout"))
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "SOURCE_DATE_EPOCH=") || strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	}), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make image in %s: %v\n%s", dir, err, stderr.String())
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "sha256:") {
		t.Fatalf("make image in %s printed no digest:\n%s", dir, out)
	}
	t.Logf("make image in %s: %s", dir, lines[len(lines)-1])
	return lines[len(lines)-1]
}

// goEnv reads one variable of `go env` in dir.
func goEnv(t *testing.T, dir, name string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// copySources copies the files git tracks, and the new ones it does not
// ignore, as they are in the working tree, so that uncommitted changes are
// built as `make image` here builds them.
func copySources(t *testing.T, from, to string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = from
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the sources with git: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(from, name)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		body, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(to, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, body, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}
