// Package ociimage builds the operator's OCI image without Docker and
// without a base image: a static Go binary, a minimal /etc for the nonroot
// user and, optionally, a CA bundle, in one layer on an empty base. Every
// timestamp is fixed, so the same sources, toolchain and inputs give the
// same digest. `make image` drives it through cmd/anvil-image.
package ociimage
