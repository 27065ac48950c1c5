package novaconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestFileRender(t *testing.T) {
	tests := []struct {
		name string
		file File
		want string
	}{
		{name: "empty file", file: File{}, want: ""},
		{
			name: "one section",
			file: File{Sections: []Section{{Name: "DEFAULT", Options: []Option{{"debug", "true"}}}}},
			want: "[DEFAULT]\ndebug = true\n",
		},
		{
			// Order is the caller's, not alphabetical: the contract fixes it.
			name: "sections and options keep their order",
			file: File{Sections: []Section{
				{Name: "vnc", Options: []Option{{"enabled", "true"}, {"a", "b"}}},
				{Name: "DEFAULT", Options: []Option{{"z", "1"}, {"b", "2"}}},
			}},
			want: "[vnc]\nenabled = true\na = b\n\n[DEFAULT]\nz = 1\nb = 2\n",
		},
		{
			name: "section without options",
			file: File{Sections: []Section{{Name: "a"}, {Name: "b", Options: []Option{{"k", "v"}}}}},
			want: "[a]\n\n[b]\nk = v\n",
		},
		{
			name: "empty value and printable punctuation",
			file: File{Sections: []Section{{Name: "s", Options: []Option{{"k", ""}, {"u", "rabbit://u:p@h:5671/v?x=1#f"}}}}},
			want: "[s]\nk = \nu = rabbit://u:p@h:5671/v?x=1#f\n",
		},
		{
			name: "non-ASCII letters are not control characters",
			file: File{Sections: []Section{{Name: "s", Options: []Option{{"k", "grüße"}}}}},
			want: "[s]\nk = grüße\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.file.Render()
			if err != nil {
				t.Fatalf("Render() error = %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Render() = %q, want %q", got, tt.want)
			}
			// Rendering twice must give identical bytes.
			again, _ := tt.file.Render()
			if string(again) != string(got) {
				t.Errorf("second Render() differs: %q", again)
			}
		})
	}
}

func TestFileRenderRejectsBadShape(t *testing.T) {
	tests := []struct {
		name string
		file File
	}{
		{"empty section name", File{Sections: []Section{{Name: ""}}}},
		{"bracket in section name", File{Sections: []Section{{Name: "a]b"}}}},
		{"padded section name", File{Sections: []Section{{Name: " a"}}}},
		{"empty key", File{Sections: []Section{{Name: "s", Options: []Option{{"", "v"}}}}}},
		{"equals in key", File{Sections: []Section{{Name: "s", Options: []Option{{"a=b", "v"}}}}}},
		{"colon in key", File{Sections: []Section{{Name: "s", Options: []Option{{"a:b", "v"}}}}}},
		{"space in key", File{Sections: []Section{{Name: "s", Options: []Option{{"a b", "v"}}}}}},
		{"comment key", File{Sections: []Section{{Name: "s", Options: []Option{{"#a", "v"}}}}}},
		// The reader reads a line that starts with any white space as the
		// option before continuing.
		{"no-break space before a key", File{Sections: []Section{{Name: "s", Options: []Option{{"\u00a0a", "v"}}}}}},
		{"ideographic space after a key", File{Sections: []Section{{Name: "s", Options: []Option{{"a\u3000", "v"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.file.Render(); err == nil || IsUnsafeValue(err) {
				t.Fatalf("Render() error = %v, want a shape error", err)
			}
		})
	}
}

// controlChars samples every part of category Cc: C0, DEL and C1.
var controlChars = []string{"\n", "\r", "\x00", "\t", "\x1b", "\x1f", "\x7f", "\u0085", "\u009f"}

func TestFileRenderRejectsControlCharacters(t *testing.T) {
	const secret = "hunter2"
	for _, c := range controlChars {
		for _, where := range []string{"name", "key", "value"} {
			t.Run(fmt.Sprintf("%q in %s", c, where), func(t *testing.T) {
				s := Section{Name: "service_user", Options: []Option{{"password", secret}}}
				switch where {
				case "name":
					s.Name += c
				case "key":
					s.Options[0].Key += c
				case "value":
					s.Options[0].Value += c
				}
				f := File{Sections: []Section{{Name: "DEFAULT", Options: []Option{{"debug", "false"}}}, s}}
				out, err := f.Render()
				var u *UnsafeValueError
				if !errors.As(err, &u) {
					t.Fatalf("Render() error = %v, want *UnsafeValueError", err)
				}
				if out != nil {
					t.Errorf("Render() returned %q alongside the error", out)
				}
				if where != "name" && u.Section != "service_user" {
					t.Errorf("Section = %q, want service_user", u.Section)
				}
				msg := err.Error()
				if strings.Contains(msg, secret) || strings.Contains(msg, c) {
					t.Errorf("message %q leaks the value or the character", msg)
				}
			})
		}
	}
}

func TestUnsafeValueErrorMessage(t *testing.T) {
	tests := []struct {
		section string
		want    string
	}{
		{"keystone_authtoken", "section [keystone_authtoken] contains a control character"},
		{"DEFAULT", "section [DEFAULT] contains a control character"},
		// A broken section name is escaped so the message stays one line.
		{"vnc\nx", `section [vnc\nx] contains a control character`},
	}
	for _, tt := range tests {
		if got := (&UnsafeValueError{Section: tt.section}).Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	wrapped := fmt.Errorf("rendering: %w", &UnsafeValueError{Section: "vnc"})
	if !IsUnsafeValue(wrapped) || IsUnsafeValue(errors.New("other")) {
		t.Error("IsUnsafeValue does not see through wrapping or accepts other errors")
	}
}

func TestFileRenderReportsFirstSectionInNameOrder(t *testing.T) {
	bad := func(name string) Section { return Section{Name: name, Options: []Option{{"k", "x\ny"}}} }
	good := func(name string) Section { return Section{Name: name, Options: []Option{{"k", "v"}}} }
	tests := []struct {
		name     string
		sections []Section
		want     string
	}{
		{"single", []Section{good("DEFAULT"), bad("vnc")}, "vnc"},
		// placement renders before neutron, but neutron sorts first.
		{"name order beats render order", []Section{bad("placement"), bad("neutron")}, "neutron"},
		{"upper case sorts first", []Section{bad("vnc"), bad("DEFAULT")}, "DEFAULT"},
		{"key_manager before keystone_authtoken", []Section{bad("keystone_authtoken"), bad("key_manager")}, "key_manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := File{Sections: tt.sections}.Render()
			var u *UnsafeValueError
			if !errors.As(err, &u) || u.Section != tt.want {
				t.Fatalf("Render() error = %v, want section %q", err, tt.want)
			}
		})
	}
}

// osloRead models how oslo.config reads back the value part of a rendered
// "key = value" line: the INI reader strips white space and one pair of
// matching quotes, then "\$" becomes "$$" and string.Template expands
// $name and ${name} with "$$" standing for '$'. It fails where oslo.config
// would substitute, so a test cannot mistake a lookup for a literal.
func osloRead(raw string) (string, error) {
	v := strings.TrimFunc(raw, unicode.IsSpace)
	if v != "" && v[0] == v[len(v)-1] && (v[0] == '"' || v[0] == '\'') {
		if len(v) == 1 {
			v = ""
		} else {
			v = v[1 : len(v)-1]
		}
	}
	v = strings.ReplaceAll(v, `\$`, `$$`)
	var out strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '$' || i+1 == len(v) {
			out.WriteByte(v[i])
			continue
		}
		switch next := v[i+1]; {
		case next == '$':
			out.WriteByte('$')
			i++
		case next == '{' || next == '_' || ('a' <= next && next <= 'z') || ('A' <= next && next <= 'Z'):
			return "", fmt.Errorf("oslo.config would substitute at byte %d", i)
		default:
			out.WriteByte('$')
		}
	}
	return out.String(), nil
}

// renderedValue renders one option and returns what follows "key = ".
func renderedValue(t testing.TB, value string) string {
	t.Helper()
	out, err := File{Sections: []Section{{Name: "s", Options: []Option{{"k", value}}}}}.Render()
	if err != nil {
		t.Fatalf("Render() error = %v", err)
	}
	line := strings.TrimSuffix(strings.TrimPrefix(string(out), "[s]\n"), "\n")
	raw, ok := strings.CutPrefix(line, "k = ")
	if !ok || strings.Contains(raw, "\n") {
		t.Fatalf("rendered %q, want one k = line", out)
	}
	return raw
}

// literalSamples are values oslo.config would change if they were written
// as they are, and some it would not.
var literalSamples = []struct{ value, rendered string }{
	{"plain", "plain"},
	{"", ""},
	{"p$ss${x}$$", "p$$ss$${x}$$$$"},
	{"$HOME", "$$HOME"},
	{"${a.b}", "$${a.b}"},
	{"$", "$$"},
	{"%(project_id)s", "%(project_id)s"},
	{" padded ", `" padded "`},
	{"trailing\u00a0", "\"trailing\u00a0\""},
	{`"quoted"`, `""quoted""`},
	{`'single'`, `"'single'"`},
	{`"`, `"""`},
	{`'`, `"'"`},
	{`"half`, `"half`},
	{`a"b"`, `a"b"`},
	{"#;[x]=:", "#;[x]=:"},
	{`back\slash`, `back\slash`},
	{`trailing\`, `trailing\`},
	{"grüße", "grüße"},
}

func TestFileRenderWritesLiteralValues(t *testing.T) {
	for _, s := range literalSamples {
		raw := renderedValue(t, s.value)
		if raw != s.rendered {
			t.Errorf("%q rendered as %q, want %q", s.value, raw, s.rendered)
		}
		if got, err := osloRead(raw); err != nil || got != s.value {
			t.Errorf("%q reads back as %q (%v)", s.value, got, err)
		}
	}
}

// FuzzLiteralRoundTrip checks that whatever Render accepts reads back
// unchanged; go test runs the seeds, go test -fuzz explores further.
func FuzzLiteralRoundTrip(f *testing.F) {
	for _, s := range literalSamples {
		f.Add(s.value)
	}
	f.Fuzz(func(t *testing.T, value string) {
		if !utf8.ValidString(value) {
			t.Skip("the config is UTF-8 text")
		}
		out, err := File{Sections: []Section{{Name: "s", Options: []Option{{"k", value}}}}}.Render()
		if err != nil {
			if !IsUnsafeValue(err) || len(out) != 0 {
				t.Fatalf("Render() = %q, %v", out, err)
			}
			return
		}
		raw := renderedValue(t, value)
		if got, err := osloRead(raw); err != nil || got != value {
			t.Fatalf("%q rendered as %q reads back as %q (%v)", value, raw, got, err)
		}
	})
}

func TestFileRenderRefusesBackslashDollar(t *testing.T) {
	const secret = `pw\$x`
	f := File{Sections: []Section{
		{Name: "service_user", Options: []Option{{"password", secret}}},
		{Name: "neutron", Options: []Option{{"password", secret}}},
		{Name: "DEFAULT", Options: []Option{{"debug", `\ $ \\`}}},
	}}
	out, err := f.Render()
	var u *UnsafeValueError
	if !errors.As(err, &u) || u.Section != "neutron" || u.Reason != BackslashDollar || out != nil {
		t.Fatalf("Render() = %q, %v; want BackslashDollar in [neutron]", out, err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("message %q leaks the value", err)
	}
	// A control character anywhere is reported first, whatever its section.
	f.Sections[2].Options[0].Value = "x\ny"
	if _, err := f.Render(); !errors.As(err, &u) || u.Section != "DEFAULT" || u.Reason != ControlCharacter {
		t.Errorf("Render() error = %v, want a control character in [DEFAULT]", err)
	}
}

func TestUnsafeValueErrorBackslashDollarMessage(t *testing.T) {
	got := (&UnsafeValueError{Section: "DEFAULT", Reason: BackslashDollar}).Error()
	if want := `section [DEFAULT] contains a backslash before a '$', which oslo.config cannot read literally`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// osloReadScript loads a config directory the way Nova's services do and
// prints the named options as strings, JSON-encoded; argv[2] lists them as
// "section/key".
const osloReadScript = `
import json, sys
from oslo_config import cfg
conf = cfg.ConfigOpts()
paths = json.loads(sys.argv[2])
for path in paths:
    group, key = path.split("/", 1)
    conf.register_opt(cfg.StrOpt(key), group=None if group == "DEFAULT" else group)
conf(["--config-dir", sys.argv[1]], project="nova", default_config_files=[], default_config_dirs=[])
out = {}
for path in paths:
    group, key = path.split("/", 1)
    out[path] = conf[key] if group == "DEFAULT" else conf[group][key]
json.dump(out, sys.stdout)
`

// osloReadDir has the real oslo.config read the options paths from the
// *.conf files of dir.
func osloReadDir(t *testing.T, dir string, paths []string) map[string]string {
	t.Helper()
	if err := exec.Command(hostPython, "-c", "import oslo_config").Run(); err != nil {
		t.Skipf("%s lacks oslo.config (apt-get install python3-nova): %v", hostPython, err)
	}
	arg, err := json.Marshal(paths)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exec.Command(hostPython, "-c", osloReadScript, dir, string(arg)).Output()
	if err != nil {
		// The interpreter's output could quote a value; report only that
		// it failed.
		t.Fatalf("oslo.config could not read %s: %v", dir, err)
	}
	var got map[string]string
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestIntegrationOsloConfigReadsLiteralValues proves literal against the
// reader that counts, not the model osloRead.
func TestIntegrationOsloConfigReadsLiteralValues(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oslo.config")
	}
	var (
		file  File
		paths []string
		want  = map[string]string{}
	)
	for i, s := range literalSamples {
		key := fmt.Sprintf("k%d", i)
		file.Sections = append(file.Sections, Section{Name: "s", Options: []Option{{key, s.value}}})
		paths = append(paths, "s/"+key)
		want["s/"+key] = s.value
	}
	out, err := file.Render()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "literal.conf"), out, 0o600); err != nil {
		t.Fatal(err)
	}
	got := osloReadDir(t, dir, paths)
	for _, p := range paths {
		if got[p] != want[p] {
			t.Errorf("%s: oslo.config read %q, want %q", p, got[p], want[p])
		}
	}
}

func TestInterpolatedIsOnlyTheNamedValue(t *testing.T) {
	f := File{
		Sections:     []Section{{Name: "vnc", Options: []Option{{Key: "server_listen", Value: "$my_ip"}, {Key: "other", Value: "$my_ip"}}}},
		Interpolated: map[string]string{"vnc/server_listen": "$my_ip"},
	}
	got, err := f.Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := "[vnc]\nserver_listen = $my_ip\nother = $$my_ip\n"; string(got) != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	f.Sections[0].Options[0].Value = "${x}"
	if got, _ := f.Render(); !strings.Contains(string(got), "server_listen = $${x}") {
		t.Errorf("a value other than the named one must be written literally: %q", got)
	}
}
