package novaconfig

import (
	"errors"
	"fmt"
	"strings"
	"testing"
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
