package guidecheck

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The guide's manifests are compared with what the scripts apply, not
// only its commands: a script that runs `kubectl apply -f - <<EOF` with
// another body tests another manifest than the one users copy.

// Manifest is one YAML document of the guide or of a script, parsed.
type Manifest struct {
	// Label names the document in reports and exemptions: its kind and
	// name, or for a fragment without them its first line.
	Label string
	// Object is the document as JSON decodes it: maps, lists, strings,
	// float64 numbers, booleans and nil.
	Object map[string]any
}

// yamlKey matches a line that opens a top-level YAML mapping, such as
// `spec:`. Prose never is a bare key without spaces.
var yamlKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*:\s*$`)

// yamlLine matches a line that continues a YAML block at the top level:
// a key with or without a value, or a comment.
var yamlLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*:(\s|$)|#)`)

// Blocks returns the YAML blocks of a guide written as plain text: the
// body of every here-document a command opens, such as `kubectl apply -f
// - <<EOF`, and every block that stands alone, such as a fragment of a
// Helm release. A block standing alone opens as opensYAML says and ends
// at the first blank line or the first line of prose.
func Blocks(text string) []string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		switch {
		case opensCommand(lines[i]):
			// A command continues over lines ending in a backslash; the
			// here-document starts after its last line.
			cmd := lines[i]
			for strings.HasSuffix(strings.TrimSpace(lines[i]), `\`) && i+1 < len(lines) {
				i++
				cmd += " " + lines[i]
			}
			if m := heredoc.FindStringSubmatch(cmd); m != nil {
				var body string
				body, i = hereBody(lines, i+1, m[1])
				out = append(out, body)
			}
		case opensYAML(lines, i):
			start := i
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" &&
				(strings.HasPrefix(lines[i+1], " ") || yamlLine.MatchString(lines[i+1])) {
				i++
			}
			out = append(out, strings.Join(lines[start:i+1], "\n"))
		}
	}
	return out
}

// opensYAML tells whether a YAML block standing alone starts at line i: a
// bare key with an indented line under it, or a comment right above such
// a key. The indented line keeps a heading like "Steps:" out.
func opensYAML(lines []string, i int) bool {
	if strings.HasPrefix(lines[i], "# ") {
		i++
	}
	return i+1 < len(lines) && yamlKey.MatchString(lines[i]) && strings.HasPrefix(lines[i+1], " ")
}

// hereBody returns the lines from start up to the delimiter end, and the
// index of the delimiter's line (or the last line when it is missing).
func hereBody(lines []string, start int, end string) (string, int) {
	i := start
	for i < len(lines) && strings.TrimSpace(lines[i]) != end {
		i++
	}
	return strings.Join(lines[start:min(i, len(lines))], "\n"), i
}

// AppliedBlocks returns the bodies of the here-documents a script feeds to
// `kubectl ... apply`. A dry run, which the scripts use to show that
// admission refuses a manifest, applies nothing and is left out.
func AppliedBlocks(script string) []string {
	lines := strings.Split(script, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		m := heredoc.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		body, end := hereBody(lines, i+1, m[1])
		if strings.Contains(line, "kubectl ") && strings.Contains(line, " apply ") &&
			!strings.Contains(line, "--dry-run") && !strings.HasPrefix(line, "refuses ") {
			out = append(out, body)
		}
		i = end
	}
	return out
}

// docSeparator splits a YAML stream into documents.
var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// Documents splits blocks into their YAML documents, each trimmed, and
// drops the empty ones: this is the form the stored copy of the guide's
// manifests keeps and compares.
func Documents(blocks []string) []string {
	var out []string
	for _, b := range blocks {
		for _, d := range docSeparator.Split(b, -1) {
			if d = strings.Trim(d, "\n"); strings.TrimSpace(d) != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

// Parse decodes YAML documents into manifests. A document that is not a
// YAML mapping is an error: the check cannot compare what it cannot read.
func Parse(docs []string) ([]Manifest, error) {
	out := make([]Manifest, 0, len(docs))
	for _, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			return nil, fmt.Errorf("a YAML document starting %q: %w", firstLine(d), err)
		}
		if obj == nil {
			continue
		}
		out = append(out, Manifest{Label: label(obj, d), Object: obj})
	}
	return out, nil
}

// label is "Kind name" when the document has both, else its first line.
func label(obj map[string]any, doc string) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if kind != "" && name != "" {
		return kind + " " + name
	}
	return firstLine(doc)
}

func firstLine(doc string) string {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// CompareManifests returns what keeps the scripts from applying each of
// the guide's manifests as written: a manifest no script applies under
// its label, or the fields in which the closest applied one differs. An
// exemption is a prefix of a manifest's label, which exempts it whole, or
// of "label field", which exempts that field.
func CompareManifests(guide, applied []Manifest, exempt []string) []string {
	var out []string
	for _, g := range guide {
		if isExempt(g.Label, exempt) {
			continue
		}
		var best []string
		seen, matched := false, false
		for _, a := range applied {
			if a.Label != g.Label {
				continue
			}
			var left []string
			for _, d := range Diff("", g.Object, a.Object) {
				if !isExempt(g.Label+" "+d.Path, exempt) {
					left = append(left, g.Label+" "+d.String())
				}
			}
			if len(left) == 0 {
				matched = true
				break
			}
			if !seen || len(left) < len(best) {
				best = left
			}
			seen = true
		}
		switch {
		case matched:
		case !seen:
			out = append(out, g.Label+": no script applies it")
		default:
			out = append(out, best...)
		}
	}
	return out
}

// Difference is one field in which an applied manifest differs from the
// guide's.
type Difference struct {
	// Path names the field, such as spec.novaMetadata.port.
	Path string
	// Guide and Applied are the two values; nil where a side lacks it.
	Guide, Applied any
}

// String tells the field and both values, for the report.
func (d Difference) String() string {
	return fmt.Sprintf("%s: the guide has %s, the scripts %s", d.Path, show(d.Guide), show(d.Applied))
}

func show(v any) string {
	if v == nil {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Diff compares two decoded YAML values field by field. Keys, kinds and
// names must match exactly; a string of the guide with a placeholder such
// as <node> matches any value of one word in its place.
func Diff(path string, guide, applied any) []Difference {
	switch g := guide.(type) {
	case map[string]any:
		a, ok := applied.(map[string]any)
		if !ok {
			return []Difference{{path, guide, applied}}
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range g {
				if !yield(k) {
					return
				}
			}
			for k := range a {
				if _, dup := g[k]; !dup && !yield(k) {
					return
				}
			}
		})
		var out []Difference
		for _, k := range keys {
			out = append(out, Diff(field(path, k), g[k], a[k])...)
		}
		return out
	case []any:
		a, ok := applied.([]any)
		if !ok || len(a) != len(g) {
			return []Difference{{path, guide, applied}}
		}
		var out []Difference
		for i := range g {
			out = append(out, Diff(fmt.Sprintf("%s[%d]", path, i), g[i], a[i])...)
		}
		return out
	case string:
		if a, ok := applied.(string); ok && placeholder.MatchString(g) && anchored(g).MatchString(a) {
			return nil
		}
	}
	if reflect.DeepEqual(guide, applied) {
		return nil
	}
	return []Difference{{path, guide, applied}}
}

// field appends a key to a path; a key with a dot or a slash, such as a
// label, is quoted so the path stays readable.
func field(path, key string) string {
	if strings.ContainsAny(key, "./") {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// anchored is pattern for a whole value rather than a part of a script.
func anchored(s string) *regexp.Regexp {
	return regexp.MustCompile(`^(?:` + pattern(s).String() + `)$`)
}
