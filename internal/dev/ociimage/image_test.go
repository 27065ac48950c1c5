package ociimage_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/anvil/anvil/internal/dev/ociimage"
)

// created is the fixed timestamp of the test images.
var created = time.Unix(1_700_000_000, 0).UTC()

// helloOptions builds the small testdata command instead of the operator,
// which would take minutes per platform.
func helloOptions(t *testing.T, platforms ...v1.Platform) ociimage.Options {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ociimage.Options{
		Dir: ".", Package: "./testdata/hello", Name: "hello",
		Platforms: platforms, WorkDir: t.TempDir(),
		CABundle: ca, Created: created,
		Labels: map[string]string{"org.opencontainers.image.title": "hello"},
	}
}

// layerFiles reads the image's single layer into a map of path to header
// and content.
func layerFiles(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1: the image has no base", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	headers, bodies := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, bodies
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		headers[hdr.Name], bodies[hdr.Name] = hdr, body
	}
}

// checkStatic fails unless body is an ELF executable for machine with no
// interpreter, i.e. one that runs on an empty base.
func checkStatic(t *testing.T, body []byte, machine elf.Machine) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	if f.Machine != machine {
		t.Errorf("binary machine %s, want %s", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader; it must be static (CGO_ENABLED=0)")
		}
	}
}

func TestImageRunsTheStaticBinaryAsNonroot(t *testing.T) {
	p := v1.Platform{OS: "linux", Architecture: "amd64"}
	a, err := ociimage.Build(t.Context(), helloOptions(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if a.Image == nil || a.Index != nil {
		t.Fatalf("one platform must give one image, not an index: %+v", a)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := ociimage.WriteLayout(dir, a, "dev"); err != nil {
		t.Fatal(err)
	}

	// Read the image back from disk, as crane or skopeo would.
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "dev" {
		t.Fatalf("index.json = %+v, want one entry named dev", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("config User %q, want 65532:65532 (nonroot)", cfg.Config.User)
	}
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/usr/local/bin/hello" {
		t.Errorf("entrypoint %q, want /usr/local/bin/hello", got)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || !cfg.Created.Equal(created) {
		t.Errorf("config platform %s/%s created %v", cfg.OS, cfg.Architecture, cfg.Created)
	}

	headers, bodies := layerFiles(t, img)
	bin, ok := bodies["usr/local/bin/hello"]
	if !ok {
		t.Fatalf("the layer does not hold the entrypoint; it holds %v", keys(headers))
	}
	if headers["usr/local/bin/hello"].Mode != 0o755 {
		t.Errorf("binary mode %o, want 755", headers["usr/local/bin/hello"].Mode)
	}
	checkStatic(t, bin, elf.EM_X86_64)
	if !strings.Contains(string(bodies["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot entry:\n%s", bodies["etc/passwd"])
	}
	if !strings.Contains(string(bodies["etc/ssl/certs/ca-certificates.crt"]), "not a real one") {
		t.Errorf("the CA bundle is missing")
	}
	for name, h := range headers {
		if !h.ModTime.Equal(created) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v uid %d gid %d; every entry must be root's and dated %v", name, h.ModTime, h.Uid, h.Gid, created)
		}
	}
}

func TestImageDigestIsReproducible(t *testing.T) {
	p := v1.Platform{OS: "linux", Architecture: "amd64"}
	digests := make([]v1.Hash, 2)
	for i := range digests {
		// A fresh work directory each time, so nothing but the inputs is
		// shared between the builds.
		a, err := ociimage.Build(t.Context(), helloOptions(t, p))
		if err != nil {
			t.Fatal(err)
		}
		if digests[i], err = a.Digest(); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same inputs gave %s and %s", digests[0], digests[1])
	}

	// Another timestamp is another input, and must show in the digest.
	o := helloOptions(t, p)
	o.Created = created.Add(time.Second)
	a, err := ociimage.Build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := a.Digest(); d == digests[0] {
		t.Errorf("changing the timestamp kept the digest %s", d)
	}
}

func TestSeveralPlatformsGiveAnIndex(t *testing.T) {
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := v1.Platform{OS: "linux", Architecture: "arm64"}
	a, err := ociimage.Build(t.Context(), helloOptions(t, amd64, arm64))
	if err != nil {
		t.Fatal(err)
	}
	if a.Index == nil {
		t.Fatal("two platforms must give an index")
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := ociimage.WriteLayout(dir, a, "dev"); err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteLayout(dir, a, "dev"); err != nil {
		t.Fatalf("rewriting a layout in place: %v", err)
	}
	if mt, _ := a.Index.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s", mt)
	}
	im, err := a.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(im.Manifests) != len(want) {
		t.Fatalf("%d manifests, want %d", len(im.Manifests), len(want))
	}
	for _, desc := range im.Manifests {
		if desc.Platform == nil {
			t.Fatalf("manifest %s has no platform", desc.Digest)
		}
		img, err := a.Index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != desc.Platform.Architecture || cfg.Config.User != "65532:65532" {
			t.Errorf("%s: config arch %s user %q", desc.Platform, cfg.Architecture, cfg.Config.User)
		}
		_, bodies := layerFiles(t, img)
		checkStatic(t, bodies["usr/local/bin/hello"], want[desc.Platform.Architecture])
	}
}

func TestWriteLayoutKeepsUnrelatedDirectories(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "precious")
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := ociimage.WriteLayout(dir, ociimage.Artifact{}, "dev")
	if err == nil || !strings.Contains(err.Error(), "not an OCI layout") {
		t.Errorf("WriteLayout over a foreign directory: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the foreign file is gone: %v", err)
	}
}

func TestParsePlatform(t *testing.T) {
	for in, want := range map[string]string{"linux/amd64": "linux/amd64", "linux/arm/v7": "linux/arm/v7"} {
		p, err := ociimage.ParsePlatform(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePlatform(%q) = %v, %v", in, p, err)
		}
	}
	for _, in := range []string{"amd64", "windows/amd64", "linux/", "linux/arm/v7/x"} {
		if _, err := ociimage.ParsePlatform(in); err == nil {
			t.Errorf("ParsePlatform(%q) succeeded", in)
		}
	}
}

// keys lists a map's keys, for messages.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
