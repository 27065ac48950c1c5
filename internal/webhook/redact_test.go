package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestLooksLikeUserInfo(t *testing.T) {
	for s, want := range map[string]bool{
		"user:password@host":         true,
		":password@":                 true,
		"rabbit://u:p@h:5671/v":      true,
		"a:b@c@d":                    true,
		"@daily":                     false,
		"user@host":                  false,
		"host:5000":                  false,
		"compute-a":                  false,
		"":                           false,
		"http://keystone:5000/v3@x":  true,
		"no colon before it @ but:x": false,
	} {
		if got := LooksLikeUserInfo(s); got != want {
			t.Errorf("LooksLikeUserInfo(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestRedactUserInfo(t *testing.T) {
	p := field.NewPath("spec", "chassisRef", "name")
	errs := redactUserInfo(field.ErrorList{
		field.Invalid(p, "nova:s3cret@host", `"nova:s3cret@host" is not a DNS name`),
		field.Invalid(p, "@dayly", "not a schedule"),
		field.Required(p, "must be set"),
	})
	if got := errs[0].Error(); strings.Contains(got, "s3cret") || !strings.Contains(got, redacted) {
		t.Errorf("the first error still echoes the value: %s", got)
	}
	if errs[1].BadValue != "@dayly" {
		t.Errorf("a value without user info was redacted: %v", errs[1].BadValue)
	}
	if errs[2].Type != field.ErrorTypeRequired {
		t.Errorf("a required error changed: %v", errs[2])
	}
}
