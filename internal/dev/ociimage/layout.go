package ociimage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// refNameAnnotation is the OCI layout annotation that names an entry of
// index.json; `skopeo copy oci:<dir>:<name>` selects by it.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// Artifact is what a build produces: one image, or an index of images when
// more than one platform was built.
type Artifact struct {
	// Image is set when one platform was built.
	Image v1.Image
	// Index is set when several were.
	Index v1.ImageIndex
}

// Digest is the digest a registry will report for the artifact, the one a
// chart pins.
func (a Artifact) Digest() (v1.Hash, error) {
	if a.Index != nil {
		return a.Index.Digest()
	}
	if a.Image != nil {
		return a.Image.Digest()
	}
	return v1.Hash{}, errors.New("empty artifact")
}

// Assemble returns the artifact of images: the image itself for one, an
// index for more.
func Assemble(images []v1.Image) (Artifact, error) {
	switch len(images) {
	case 0:
		return Artifact{}, errors.New("no image to assemble")
	case 1:
		return Artifact{Image: images[0]}, nil
	default:
		idx, err := Index(images)
		return Artifact{Index: idx}, err
	}
}

// WriteLayout writes a to an OCI image layout at dir, replacing a layout
// that is already there, with its index.json entry named refName (skipped
// when empty). It refuses to replace a directory that is neither empty nor
// an OCI layout, so a mistyped path cannot wipe unrelated files.
func WriteLayout(dir string, a Artifact, refName string) error {
	if err := clearLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if refName != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{refNameAnnotation: refName}))
	}
	if a.Index != nil {
		return p.AppendIndex(a.Index, opts...)
	}
	return p.AppendImage(a.Image, opts...)
}

// clearLayout removes dir when it is an OCI layout or empty, and fails when
// it holds anything else.
func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("%s exists and is not an OCI layout; refusing to replace it", dir)
		}
	}
	return os.RemoveAll(dir)
}

// WriteTarball writes a single-platform image as a tarball that
// `crane push` and `docker load` read, tagged ref. An index has no such
// format; push its layout instead.
func WriteTarball(path string, a Artifact, ref string) error {
	if a.Image == nil {
		return errors.New("a tarball holds one image; build one platform or push the OCI layout")
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("tarball tag %q: %w", ref, err)
	}
	return tarball.WriteToFile(path, tag, a.Image)
}
