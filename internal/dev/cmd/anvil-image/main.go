// Command anvil-image builds the operator's OCI image without Docker and
// prints its digest; see package ociimage. `make image` runs it:
//
//	anvil-image --output bin/image/anvil-operator --platforms linux/amd64,linux/arm64
//
// The layout it writes can be pushed with
// `crane push bin/image/anvil-operator <registry>/anvil-operator:<tag>` or
// `skopeo copy --all oci:bin/image/anvil-operator:dev docker://<registry>/anvil-operator:<tag>`.
// The digest it prints is the one the operator chart pins in image.digest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/anvil/anvil/internal/dev/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	opts    ociimage.Options
	output  string
	tarball string
	tag     string
}

// parse reads the flags; lookupEnv is os.LookupEnv outside tests.
func parse(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("anvil-image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var platforms string
	fs.StringVar(&c.opts.Dir, "dir", ".", "Module directory to build in.")
	fs.StringVar(&c.opts.Package, "package", "./cmd/anvil-operator", "Main package to build.")
	fs.StringVar(&c.opts.Name, "name", "anvil-operator", "Name of the binary in the image, under "+ociimage.BinDir+".")
	fs.StringVar(&platforms, "platforms", "", "Comma-separated os/arch[/variant] list; default the host's architecture. More than one writes an index.")
	fs.StringVar(&c.output, "output", "", "Directory of the OCI layout to write (replaced if it is one).")
	fs.StringVar(&c.tarball, "tarball", "", "Also write a single-platform image tarball here.")
	fs.StringVar(&c.tag, "tag", "anvil-operator:dev", "Reference the layout entry and the tarball are named by.")
	// No CA file by default: a file of the build machine would make the
	// digest depend on that machine, and the operator's binary carries
	// Mozilla's roots (golang.org/x/crypto/x509roots/fallback) instead.
	fs.StringVar(&c.opts.CABundle, "ca-bundle", "", "PEM bundle of trusted CAs to put in the image at "+ociimage.CABundlePath+"; empty puts none, and the binary's own roots apply. A bundle makes the digest depend on that file.")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.output == "" {
		return c, errors.New("--output is required")
	}
	if platforms == "" {
		c.opts.Platforms = []v1.Platform{ociimage.HostPlatform()}
	}
	for _, s := range strings.Split(platforms, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := ociimage.ParsePlatform(s)
		if err != nil {
			return c, err
		}
		c.opts.Platforms = append(c.opts.Platforms, p)
	}
	// SOURCE_DATE_EPOCH is the reproducible-builds convention for a fixed
	// timestamp; without it the image is dated at the Unix epoch.
	c.opts.Created = time.Unix(0, 0).UTC()
	if v, ok := lookupEnv("SOURCE_DATE_EPOCH"); ok && v != "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", v, err)
		}
		c.opts.Created = time.Unix(secs, 0).UTC()
	}
	c.opts.Labels = map[string]string{
		"org.opencontainers.image.title":       c.opts.Name,
		"org.opencontainers.image.description": "Anvil's operator: a static binary that runs as nonroot",
	}
	return c, nil
}

// run builds and writes the image and prints its digest on stdout, alone on
// its line, so scripts can capture it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, os.LookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "anvil-image:", err)
		return 2
	}
	work, err := os.MkdirTemp("", "anvil-image-")
	if err != nil {
		fmt.Fprintln(stderr, "anvil-image:", err)
		return 1
	}
	defer os.RemoveAll(work)
	c.opts.WorkDir = work
	if err := write(ctx, c, stderr, stdout); err != nil {
		fmt.Fprintln(stderr, "anvil-image:", err)
		return 1
	}
	return 0
}

// write builds the artifact, writes the layout and the tarball, and prints
// the digest.
func write(ctx context.Context, c config, progress, stdout io.Writer) error {
	names := make([]string, len(c.opts.Platforms))
	for i, p := range c.opts.Platforms {
		names[i] = p.String()
	}
	fmt.Fprintf(progress, "building %s for %s\n", c.opts.Package, strings.Join(names, ", "))
	a, err := ociimage.Build(ctx, c.opts)
	if err != nil {
		return err
	}
	refName := c.tag
	if i := strings.LastIndex(c.tag, ":"); i >= 0 && !strings.Contains(c.tag[i:], "/") {
		refName = c.tag[i+1:]
	}
	if err := ociimage.WriteLayout(c.output, a, refName); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	fmt.Fprintf(progress, "wrote the OCI layout %s (entry %q)\n", c.output, refName)
	if c.tarball != "" {
		if err := ociimage.WriteTarball(c.tarball, a, c.tag); err != nil {
			return fmt.Errorf("writing the tarball: %w", err)
		}
		fmt.Fprintf(progress, "wrote the tarball %s\n", c.tarball)
	}
	digest, err := a.Digest()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, digest.String())
	return err
}
