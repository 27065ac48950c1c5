// Package sharedbuild checks that the tool module hack/tools/kube and
// Anvil's own module ask for the same version of every module they share.
// The build cache keys a compiled package on the versions of everything it
// imports, so one module at two versions makes a fresh machine compile the
// Kubernetes libraries once for the tools and again for the tests; see
// docs/design/foundation.md.
package sharedbuild

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// GoMod is what the check reads from a go.mod file: the version each
// module is required at, and the version a replace directive swaps in.
type GoMod struct {
	Require map[string]string
	Replace map[string]string
}

// Parse reads the require and replace directives of a go.mod file, in
// both their one-line and block forms. Replacements by a local path have
// no version and are skipped: the cache keys those by their directory.
func Parse(data []byte) (GoMod, error) {
	m := GoMod{Require: map[string]string{}, Replace: map[string]string{}}
	block := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
			continue
		case block != "" && line == ")":
			block = ""
			continue
		case block == "" && strings.HasSuffix(line, "("):
			block = strings.TrimSpace(strings.TrimSuffix(line, "("))
			continue
		}
		directive, rest := block, line
		if block == "" {
			directive, rest, _ = strings.Cut(line, " ")
		}
		if err := m.add(directive, strings.Fields(rest)); err != nil {
			return GoMod{}, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return m, sc.Err()
}

// add records one require or replace entry; other directives are ignored.
func (m GoMod) add(directive string, f []string) error {
	switch directive {
	case "require":
		if len(f) != 2 {
			return fmt.Errorf("require wants a module and a version, got %q", strings.Join(f, " "))
		}
		m.Require[f[0]] = f[1]
	case "replace":
		arrow := -1
		for i, w := range f {
			if w == "=>" {
				arrow = i
			}
		}
		if arrow < 1 || arrow+1 >= len(f) {
			return fmt.Errorf("replace without a target: %q", strings.Join(f, " "))
		}
		if len(f)-arrow == 3 {
			m.Replace[f[0]] = f[arrow+2]
		}
	}
	return nil
}

// Mismatches lists, sorted, every module both files require at different
// versions, and every module Anvil requires that the tools replace with a
// version other than the one they require (the cache keys on the required
// one). An empty list means every shared package compiles once.
func Mismatches(anvil, tools GoMod) []string {
	var out []string
	for mod, want := range anvil.Require {
		got, ok := tools.Require[mod]
		if !ok {
			continue
		}
		if got != want {
			out = append(out, fmt.Sprintf("%s: Anvil requires %s, the tools %s", mod, want, got))
		}
		if r, ok := tools.Replace[mod]; ok && r != got {
			out = append(out, fmt.Sprintf("%s: the tools require %s but replace it with %s", mod, got, r))
		}
	}
	sort.Strings(out)
	return out
}
