package novaconfig

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
	// Interpolated maps options, as "section/key", to the one value of
	// each that is written as it is, so oslo.config expands the $name
	// references in it. Only constants Anvil writes belong here, such as
	// "$my_ip"; any other value, one a user or a Secret gave above all, is
	// written literally.
	Interpolated map[string]string
}

// UnsafeReason says why a value cannot be written.
type UnsafeReason int

const (
	// ControlCharacter is a newline or another character of category Cc.
	// It is the zero value, so an UnsafeValueError built without a reason
	// means this one.
	ControlCharacter UnsafeReason = iota
	// BackslashDollar is a backslash directly before a '$'. oslo.config
	// turns every "\$" into "$$" before it expands variables, so no spelling
	// of such a value reads back as written.
	BackslashDollar
)

// UnsafeValueError reports that a section name, key or value cannot be
// written. It names only the section: the value may be a password, and the
// message ends up in a condition that anyone who can read the CR sees.
type UnsafeValueError struct {
	// Section is the name of the first offending section in name order.
	Section string
	// Reason is what was found; control characters are reported first.
	Reason UnsafeReason
}

// Error names the section and the kind of character, nothing else.
func (e *UnsafeValueError) Error() string {
	if e.Reason == BackslashDollar {
		return fmt.Sprintf("section [%s] contains a backslash before a '$', which oslo.config cannot read literally",
			printable(e.Section))
	}
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
//
// Every value is literal: Render spells it so that oslo.config reads back
// exactly the string given (see literal). The escaping lives here, not in
// each renderer, because every file this package writes is read by
// oslo.config and every value may come from a user or a Secret.
func (f File) Render() ([]byte, error) {
	if name, ok := firstUnsafeSection(f.Sections); ok {
		return nil, &UnsafeValueError{Section: name}
	}
	if name, ok := firstSectionWhere(f.Sections, hasBackslashDollar); ok {
		return nil, &UnsafeValueError{Section: name, Reason: BackslashDollar}
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
			value := o.Value
			if want, ok := f.Interpolated[s.Name+"/"+o.Key]; !ok || want != value {
				value = literal(value)
			}
			buf.WriteString(o.Key + " = " + value + "\n")
		}
	}
	return buf.Bytes(), nil
}

// firstUnsafeSection returns the smallest section name, by byte order, whose
// name, keys or values carry a control character. Name order rather than
// render order keeps the reported section stable when sections are
// reordered or several inputs go bad at once.
func firstUnsafeSection(sections []Section) (string, bool) {
	return firstSectionWhere(sections, sectionIsUnsafe)
}

// firstSectionWhere returns the smallest section name, by byte order, of
// the sections bad reports.
func firstSectionWhere(sections []Section, bad func(Section) bool) (string, bool) {
	var names []string
	for _, s := range sections {
		if bad(s) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	sort.Strings(names)
	return names[0], true
}

func hasBackslashDollar(s Section) bool {
	for _, o := range s.Options {
		if strings.Contains(o.Value, `\$`) {
			return true
		}
	}
	return false
}

// literal spells v so that oslo.config reads back exactly v. Its INI reader
// strips surrounding white space and then one pair of matching quotes, and
// oslo.config then expands $name and ${name}, with "$$" standing for '$'.
// So every '$' is doubled, and a value the reader would trim is wrapped in
// one more pair of double quotes, which the reader removes again.
func literal(v string) string {
	v = strings.ReplaceAll(v, "$", "$$")
	if v == "" {
		return v
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	quoted := v[0] == v[len(v)-1] && (v[0] == '"' || v[0] == '\'')
	if quoted || unicode.IsSpace(first) || unicode.IsSpace(last) {
		return `"` + v + `"`
	}
	return v
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
// from how they were written. A key may hold no white space at all, of any
// script: the reader strips it around a key, and a line that starts with it
// continues the option before. Names and keys come from constants or from
// a pool's extraConfig, which admission checks the same way, so a hit is a
// programming error or a pool admission never saw, and the message may
// name them.
func checkShape(sections []Section) error {
	for i, s := range sections {
		if s.Name == "" || strings.ContainsAny(s.Name, "[]") || strings.TrimSpace(s.Name) != s.Name {
			return fmt.Errorf("section %d has an invalid name %q", i, s.Name)
		}
		for _, o := range s.Options {
			if o.Key == "" || strings.ContainsAny(o.Key, "=:[]#;") || strings.IndexFunc(o.Key, unicode.IsSpace) >= 0 {
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
