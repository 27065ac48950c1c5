package novaconfig

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// FuzzFileRenderLines renders a file with a fuzzed section name, key and
// value after a fixed first section, and reads it back the way
// oslo.config's INI reader splits lines. A file Render accepts must read
// back as exactly the sections and options it was given: no line may turn
// into a comment, a continuation of the option before, another section or
// another key.
func FuzzFileRenderLines(f *testing.F) {
	f.Add("neutron", "password", "p$ss word")
	f.Add("DEFAULT", "debug", " true ")
	f.Add("libvirt", "\u00a0virt_type", "kvm")
	f.Add("s", "k", "v\u2028[x]")
	f.Fuzz(func(t *testing.T, name, key, value string) {
		file := File{Sections: []Section{
			{Name: "DEFAULT", Options: []Option{{"transport_url", "rabbit://nova@bus/"}}},
			{Name: name, Options: []Option{{key, value}}},
		}}
		out, err := file.Render()
		if err != nil {
			return
		}
		got, err := osloLines(string(out))
		if err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		want := []string{"[DEFAULT]", "transport_url", "[" + name + "]", key}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("%q reads back as %q, want %q", out, got, want)
		}
	})
}

// osloLines reads an INI file as oslo.config's parser splits it, and
// returns its section headers and option keys in order. It refuses what
// Render never means to write: a continuation line, a comment, or a line
// that is neither a header nor a key-value pair.
func osloLines(text string) ([]string, error) {
	var out []string
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		line = strings.TrimRightFunc(line, pyIsSpace)
		switch {
		case line == "":
			continue
		case pyIsSpace([]rune(line)[0]):
			return nil, lineError(i, "continues the option before")
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") || len(line) <= 2 {
				return nil, lineError(i, "is a malformed header")
			}
			out = append(out, line)
		case line[0] == '#' || line[0] == ';':
			return nil, lineError(i, "is a comment")
		default:
			idx := strings.IndexAny(line, ":=")
			if idx < 0 {
				return nil, lineError(i, "has no separator")
			}
			out = append(out, strings.TrimFunc(line[:idx], pyIsSpace))
		}
	}
	return out, nil
}

// pyIsSpace is Python's str.isspace for one character: Unicode white space
// and the information separators U+001C to U+001F.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

func lineError(i int, what string) error { return fmt.Errorf("line %d %s", i+1, what) }
