package ociimage

import (
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The caller's compiler settings never reach the build, whatever they
// are; where things are kept and fetched from does.
func TestBuildEnv(t *testing.T) {
	caller := []string{"HOME=/home/dev", "GOCACHE=/x/cache", "GOPROXY=file:///m", "GOFLAGS=-buildvcs=true -tags=debug",
		"GOAMD64=v3", "GOEXPERIMENT=arenas", "CGO_ENABLED=1", "GOTOOLCHAIN=local", "GOARCH=386", "GOFIPS140=latest"}
	for _, tc := range []struct {
		platform v1.Platform
		want     []string
		err      bool
	}{
		{platform: v1.Platform{OS: "linux", Architecture: "amd64"}, want: []string{"GOARCH=amd64", "GOAMD64=v1"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm64"}, want: []string{"GOARCH=arm64", "GOARM64=v8.0"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, want: []string{"GOARCH=arm64", "GOARM64=v8.0"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, want: []string{"GOARCH=arm", "GOARM=7"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}, want: []string{"GOARCH=arm", "GOARM=6"}},
		{platform: v1.Platform{OS: "linux", Architecture: "arm"}, want: []string{"GOARCH=arm", "GOARM=7"}},
		{platform: v1.Platform{OS: "linux", Architecture: "s390x"}, want: []string{"GOARCH=s390x"}},
		{platform: v1.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}, err: true},
	} {
		t.Run(tc.platform.String(), func(t *testing.T) {
			env, err := buildEnv(caller, tc.platform, "go1.26.8")
			if tc.err {
				if err == nil {
					t.Fatalf("variant %q accepted", tc.platform.Variant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"HOME=/home/dev", "GOCACHE=/x/cache", "GOPROXY=file:///m",
				"CGO_ENABLED=0", "GOOS=linux", "GOTOOLCHAIN=go1.26.8", "GOFLAGS="}, tc.want...)
			slices.Sort(want)
			got := slices.Sorted(slices.Values(env))
			if !slices.Equal(got, want) {
				t.Errorf("env\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
			}
		})
	}
}
