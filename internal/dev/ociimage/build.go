package ociimage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ParsePlatform reads "linux/amd64" or "linux/arm/v7". Only linux is
// accepted, because the image holds nothing but a Linux binary.
func ParsePlatform(s string) (v1.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s)
	}
	if parts[0] != "linux" {
		return v1.Platform{}, fmt.Errorf("platform %q: only linux images are built", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// HostPlatform is linux on the architecture of the machine that builds.
func HostPlatform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// buildVariables are the Go settings that change what the compiler emits.
// buildEnv drops the caller's values of them and sets its own, so that a
// developer's GOFLAGS or GOAMD64 cannot change the digest.
var buildVariables = []string{
	"CGO_ENABLED", "GOOS", "GOARCH", "GOARM", "GOARM64", "GOAMD64", "GO386", "GOMIPS", "GOMIPS64",
	"GOPPC64", "GORISCV64", "GOWASM", "GOEXPERIMENT", "GOFLAGS", "GOTOOLCHAIN", "GOFIPS140",
}

// buildEnv is the environment of `go build` for one platform, from the
// caller's environment base: no cgo, so the binary needs no libc in the
// image; the target's GOOS, GOARCH and baseline instruction set; the Go
// toolchain the module pins; and no GOFLAGS. Everything else, such as
// GOCACHE, GOPATH and GOPROXY, only says where things are kept or fetched,
// which -trimpath keeps out of the binary. It is pure.
func buildEnv(base []string, p v1.Platform, toolchain string) ([]string, error) {
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(buildVariables, name)
	})
	env = append(env, "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOTOOLCHAIN="+toolchain, "GOFLAGS=")
	switch {
	case p.Architecture == "amd64" && p.Variant == "":
		env = append(env, "GOAMD64=v1")
	case p.Architecture == "arm64" && (p.Variant == "" || p.Variant == "v8"):
		env = append(env, "GOARM64=v8.0")
	case p.Architecture == "arm" && p.Variant == "":
		// Go's own default for arm depends on the machine that builds.
		env = append(env, "GOARM=7")
	case p.Architecture == "arm" && strings.HasPrefix(p.Variant, "v"):
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	case p.Variant == "":
	default:
		return nil, fmt.Errorf("platform %s: variant %q is not supported", p, p.Variant)
	}
	return env, nil
}

// Toolchain reads the toolchain line of the go.mod in dir, e.g.
// "go1.26.8". The image is built with exactly that Go, fetched from the
// module proxy if the machine has another, because two Go releases compile
// the same source to different bytes.
func Toolchain(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading go.mod in %s: %w", dir, err)
	}
	var mod struct{ Toolchain string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("reading go.mod in %s: %w", dir, err)
	}
	if !strings.HasPrefix(mod.Toolchain, "go1.") {
		return "", fmt.Errorf("go.mod in %s names no toolchain (want a line such as \"toolchain go1.26.8\"): the image would depend on the Go that happens to be installed", dir)
	}
	return mod.Toolchain, nil
}

// GoBuild compiles pkg (a package path as `go build` takes it, resolved in
// dir) for platform p with the given toolchain into outDir and returns the
// binary's path. The flags make the binary reproducible: -trimpath drops
// local paths, -buildvcs=false keeps the commit out of it (so pinning the
// digest in a commit does not change the digest), and an empty build ID
// removes the last varying bytes. -dwarf=false is the Makefile's compiler
// setting: with it the image reuses the packages the tests compiled.
func GoBuild(ctx context.Context, dir, pkg, name, outDir, toolchain string, p v1.Platform) (string, error) {
	env, err := buildEnv(os.Environ(), p, toolchain)
	if err != nil {
		return "", err
	}
	out := filepath.Join(outDir, p.OS+"-"+p.Architecture+p.Variant, name)
	// #nosec G204 -- the dev tree runs the Go toolchain on a package its caller names.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-gcflags=all=-dwarf=false",
		"-ldflags=-s -w -buildid=", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for %s: %w\n%s", pkg, p, err, stderr.String())
	}
	return out, nil
}

// Options say what Build compiles and packs.
type Options struct {
	// Dir is the module directory `go build` runs in.
	Dir string
	// Package is the main package, e.g. ./cmd/anvil-operator.
	Package string
	// Name is the binary's name in the image.
	Name string
	// Platforms to build, at least one; more than one gives an index.
	Platforms []v1.Platform
	// WorkDir receives the compiled binaries.
	WorkDir string
	// CABundle, Created and Labels are as in Spec. A CABundle makes the
	// digest depend on that file; the operator needs none, since its
	// binary carries fallback roots.
	CABundle string
	Created  time.Time
	Labels   map[string]string
}

// Build compiles the package for every platform and assembles the images,
// one per platform, into an Artifact.
func Build(ctx context.Context, o Options) (Artifact, error) {
	if len(o.Platforms) == 0 {
		return Artifact{}, errors.New("no platform to build")
	}
	toolchain, err := Toolchain(ctx, o.Dir)
	if err != nil {
		return Artifact{}, err
	}
	images := make([]v1.Image, 0, len(o.Platforms))
	for _, p := range o.Platforms {
		bin, err := GoBuild(ctx, o.Dir, o.Package, o.Name, o.WorkDir, toolchain, p)
		if err != nil {
			return Artifact{}, err
		}
		img, err := Image(Spec{Binary: bin, Name: o.Name, Platform: p, CABundle: o.CABundle, Created: o.Created, Labels: o.Labels})
		if err != nil {
			return Artifact{}, fmt.Errorf("image for %s: %w", p, err)
		}
		images = append(images, img)
	}
	return Assemble(images)
}
