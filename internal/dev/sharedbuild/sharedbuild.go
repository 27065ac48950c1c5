// Package sharedbuild checks that the tool module hack/tools/kube and
// Anvil's own module ask for the same version of every module they share.
// The build cache keys a compiled package on the versions of everything it
// imports, so one module at two versions makes a fresh machine compile the
// Kubernetes libraries once for the tools and again for the tests; see
// docs/design/foundation.md.
package sharedbuild

import (
	"fmt"
	"sort"

	"golang.org/x/mod/modfile"
)

// Mismatches lists, sorted, every module both go.mod files require at
// different versions, and every module Anvil requires that the tools
// replace with another version than the one they require (the cache keys
// on the required one). Replacements by a local path have no version and
// are skipped: the cache keys those by their directory. An empty list
// means every shared package compiles once.
func Mismatches(anvil, tools *modfile.File) []string {
	toolReq := map[string]string{}
	for _, r := range tools.Require {
		toolReq[r.Mod.Path] = r.Mod.Version
	}
	toolRep := map[string]string{}
	for _, r := range tools.Replace {
		if r.New.Version != "" {
			toolRep[r.Old.Path] = r.New.Version
		}
	}
	var out []string
	for _, r := range anvil.Require {
		mod, want := r.Mod.Path, r.Mod.Version
		got, ok := toolReq[mod]
		if !ok {
			continue
		}
		if got != want {
			out = append(out, fmt.Sprintf("%s: Anvil requires %s, the tools %s", mod, want, got))
		}
		if rep, ok := toolRep[mod]; ok && rep != got {
			out = append(out, fmt.Sprintf("%s: the tools require %s but replace it with %s", mod, got, rep))
		}
	}
	sort.Strings(out)
	return out
}
