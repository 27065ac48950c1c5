package novaconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"
)

// parseINI reads a rendered fragment back into section -> key -> value. It
// accepts only the shape Render writes, so it doubles as a format check.
func parseINI(t *testing.T, data []byte) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	current := ""
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			current = line[1 : len(line)-1]
			if _, dup := out[current]; dup {
				t.Fatalf("line %d: section [%s] appears twice", i+1, current)
			}
			out[current] = map[string]string{}
		default:
			key, value, ok := strings.Cut(line, " = ")
			if !ok || current == "" {
				t.Fatalf("line %d: %q is not a key = value line inside a section", i+1, line)
			}
			if _, dup := out[current][key]; dup {
				t.Fatalf("line %d: [%s] %s appears twice", i+1, current, key)
			}
			out[current][key] = value
		}
	}
	return out
}

// sectionNames lists the section headers in the order they appear.
func sectionNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "[") {
			names = append(names, strings.Trim(line, "[]"))
		}
	}
	return names
}

func sortedKeys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func mapsEqual(a, b map[string]string) bool { return maps.Equal(a, b) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
