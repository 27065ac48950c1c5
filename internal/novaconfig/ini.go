package novaconfig

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Option is one "key = value" line of an INI section.
type Option struct {
	Key   string
	Value string
}

// Section is one "[name]" block with its options in the order they are
// written.
type Section struct {
	Name    string
	Options []Option
}

// File is an INI document. Sections and options are written in the order
// given, so the same File always renders to the same bytes: the pool hashes
// the contract into its pod template, and a reordering would roll every pod.
type File struct {
	Sections []Section
}

// UnsafeValueError reports that a section name, key or value holds a control
// character. It names only the section: the value may be a password, and the
// message ends up in a condition that anyone who can read the CR sees.
type UnsafeValueError struct {
	// Section is the name of the first offending section in name order.
	Section string
}

// Error names the section and nothing else.
func (e *UnsafeValueError) Error() string {
	return fmt.Sprintf("section [%s] contains a control character", printable(e.Section))
}

// IsUnsafeValue tells whether err is, or wraps, an *UnsafeValueError.
func IsUnsafeValue(err error) bool {
	var u *UnsafeValueError
	return errors.As(err, &u)
}

// Render writes the file as "key = value" lines, one blank line between
// sections and a trailing newline. It refuses control characters anywhere, since
// a newline in a value would let that value start a new option or section.
func (f File) Render() ([]byte, error) {
	if name, ok := firstUnsafeSection(f.Sections); ok {
		return nil, &UnsafeValueError{Section: name}
	}
	if err := checkShape(f.Sections); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, s := range f.Sections {
		if i > 0 {
			buf.WriteByte('\n')
		}
		buf.WriteString("[" + s.Name + "]\n")
		for _, o := range s.Options {
			buf.WriteString(o.Key + " = " + o.Value + "\n")
		}
	}
	return buf.Bytes(), nil
}

// firstUnsafeSection returns the smallest section name, by byte order, whose
// name, keys or values carry a control character. Name order rather than
// render order keeps the reported section stable when sections are
// reordered or several inputs go bad at once.
func firstUnsafeSection(sections []Section) (string, bool) {
	var bad []string
	for _, s := range sections {
		if sectionIsUnsafe(s) {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) == 0 {
		return "", false
	}
	sort.Strings(bad)
	return bad[0], true
}

func sectionIsUnsafe(s Section) bool {
	if hasControl(s.Name) {
		return true
	}
	for _, o := range s.Options {
		if hasControl(o.Key) || hasControl(o.Value) {
			return true
		}
	}
	return false
}

// hasControl reports a rune of Unicode category Cc: C0 controls, DEL and the
// C1 block, which includes NEL (U+0085) that some readers treat as a newline.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// checkShape rejects names and keys the INI reader would split differently
// from how they were written. These come from constants in this package, so
// a hit is a programming error and the message may name them.
func checkShape(sections []Section) error {
	for i, s := range sections {
		if s.Name == "" || strings.ContainsAny(s.Name, "[]") || strings.TrimSpace(s.Name) != s.Name {
			return fmt.Errorf("section %d has an invalid name %q", i, s.Name)
		}
		for _, o := range s.Options {
			if o.Key == "" || strings.ContainsAny(o.Key, "=:[]#; \t") {
				return fmt.Errorf("section [%s] has an invalid key %q", s.Name, o.Key)
			}
		}
	}
	return nil
}

// printable escapes control characters so that an error message about a
// malformed section name stays on one line.
func printable(s string) string {
	if !hasControl(s) {
		return s
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}
