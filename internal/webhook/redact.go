package webhook

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// redacted stands in an admission error for a value it must not echo.
const redacted = "<redacted>"

// redactUserInfo keeps every admission error from echoing a value that
// looks like it carries user info: a ":" before an "@", as in
// "user:password@host", however the field means it. Such a value is
// replaced in the error's value and in its detail. The rules that check
// URLs redact on their own; this is the net under every other field, since
// whoever applied the object sees the error, and so do audit logs.
func redactUserInfo(errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		s, ok := e.BadValue.(string)
		if !ok || !LooksLikeUserInfo(s) {
			continue
		}
		e.BadValue = redacted
		e.Detail = strings.ReplaceAll(e.Detail, s, redacted)
	}
	return errs
}

// LooksLikeUserInfo tells whether s has a ":" somewhere before an "@". It
// is pure, so the rule is table-tested.
func LooksLikeUserInfo(s string) bool {
	at := strings.LastIndex(s, "@")
	return at > 0 && strings.Contains(s[:at], ":")
}
