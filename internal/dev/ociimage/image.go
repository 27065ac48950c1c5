package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// NonRoot is the user and group the image runs as, the uid and gid that
	// distroless images call nonroot, so cluster policies that expect it
	// recognise it.
	NonRoot = "65532:65532"

	// BinDir is where the binary lands in the image.
	BinDir = "/usr/local/bin"

	// CABundlePath is where the CA bundle lands, the path Go's crypto/x509
	// reads first on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
)

// Spec describes one image: the binary built for one platform and what goes
// next to it.
type Spec struct {
	// Binary is the path of the static binary on the build machine.
	Binary string
	// Name is the binary's file name in the image, under BinDir; the
	// entrypoint runs it.
	Name string
	// Platform is the platform the binary was built for.
	Platform v1.Platform
	// CABundle is a PEM file copied to CABundlePath; empty adds none.
	CABundle string
	// Created is the one timestamp of the image: the config's, the
	// history's and every file's. A fixed value makes builds reproducible.
	Created time.Time
	// Labels are the config's labels, e.g. org.opencontainers.image.source.
	Labels map[string]string
}

// file is one entry of the layer.
type file struct {
	name string
	mode int64
	dir  bool
	body []byte
}

// passwd and group name root and nonroot, so tools that map the uid to a
// name (ps, id, some libraries) find one; the operator itself needs neither.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// layerFiles lists the layer's entries in the order they are written, which
// is part of what makes the digest stable.
func layerFiles(s Spec) ([]file, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	files := []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
	}
	if s.CABundle != "" {
		ca, err := os.ReadFile(s.CABundle)
		if err != nil {
			return nil, fmt.Errorf("reading the CA bundle: %w", err)
		}
		files = append(files,
			file{name: "etc/ssl/", dir: true, mode: 0o755},
			file{name: "etc/ssl/certs/", dir: true, mode: 0o755},
			file{name: CABundlePath[1:], mode: 0o644, body: ca})
	}
	files = append(files,
		file{name: "home/", dir: true, mode: 0o755},
		file{name: "home/nonroot/", dir: true, mode: 0o755},
		// A writable /tmp for the cases where the root file system is
		// writable; the chart mounts an emptyDir there instead.
		file{name: "tmp/", dir: true, mode: 0o1777},
		file{name: "usr/", dir: true, mode: 0o755},
		file{name: "usr/local/", dir: true, mode: 0o755},
		file{name: "usr/local/bin/", dir: true, mode: 0o755},
		file{name: path.Join(BinDir, s.Name)[1:], mode: 0o755, body: bin})
	return files, nil
}

// layerTar writes the layer's uncompressed tar, every entry owned by root
// and dated s.Created.
func layerTar(s Spec) ([]byte, error) {
	files, err := layerFiles(s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, ModTime: s.Created, Format: tar.FormatPAX}
		if f.dir {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Image assembles the image of s: its one layer on the empty base, with an
// OCI manifest and a config that runs the binary as NonRoot.
func Image(s Spec) (v1.Image, error) {
	raw, err := layerTar(s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.Created.UTC()}
	entrypoint := path.Join(BinDir, s.Name)
	env := []string{"PATH=" + BinDir}
	if s.CABundle != "" {
		env = append(env, "SSL_CERT_FILE="+CABundlePath)
	}
	cfg := &v1.ConfigFile{
		Architecture: s.Platform.Architecture,
		OS:           s.Platform.OS,
		Variant:      s.Platform.Variant,
		Created:      created,
		Config: v1.Config{
			User:       NonRoot,
			Entrypoint: []string{entrypoint},
			Env:        env,
			WorkingDir: "/",
			Labels:     s.Labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "anvil-image: " + entrypoint, Comment: "static binary, nonroot, no base image"},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// Index puts images into one OCI index, each described by its platform, in
// the order given.
func Index(images []v1.Image) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, 0, len(images))
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  cfg.Platform(),
		}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}
