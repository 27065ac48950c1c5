package main

import (
	"io"
	"runtime"
	"testing"
	"time"
)

// noEnv is a lookupEnv that finds nothing.
func noEnv(string) (string, bool) { return "", false }

func TestParseDefaultsToTheHostAndTheEpoch(t *testing.T) {
	c, err := parse([]string{"--output", "out"}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.opts.Platforms) != 1 || c.opts.Platforms[0].Architecture != runtime.GOARCH || c.opts.Platforms[0].OS != "linux" {
		t.Errorf("platforms %v, want linux/%s", c.opts.Platforms, runtime.GOARCH)
	}
	if !c.opts.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", c.opts.Created)
	}
	if c.opts.Package != "./cmd/anvil-operator" || c.opts.Name != "anvil-operator" {
		t.Errorf("package %q name %q", c.opts.Package, c.opts.Name)
	}
}

func TestParseReadsPlatformsAndSourceDateEpoch(t *testing.T) {
	env := func(k string) (string, bool) { return "1700000000", k == "SOURCE_DATE_EPOCH" }
	c, err := parse([]string{"--output", "out", "--platforms", "linux/amd64, linux/arm64"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.opts.Platforms) != 2 || c.opts.Platforms[1].Architecture != "arm64" {
		t.Errorf("platforms %v", c.opts.Platforms)
	}
	if c.opts.Created.Unix() != 1_700_000_000 {
		t.Errorf("created %v", c.opts.Created)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, args := range map[string][]string{
		"no output":        {},
		"windows platform": {"--output", "out", "--platforms", "windows/amd64"},
	} {
		if _, err := parse(args, noEnv, io.Discard); err == nil {
			t.Errorf("%s: parse succeeded", name)
		}
	}
	bad := func(k string) (string, bool) { return "yesterday", k == "SOURCE_DATE_EPOCH" }
	if _, err := parse([]string{"--output", "out"}, bad, io.Discard); err == nil {
		t.Error("a non-numeric SOURCE_DATE_EPOCH was accepted")
	}
}
