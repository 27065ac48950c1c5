package openstack

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
)

// APIError is a failed OpenStack call. It names the operation and carries
// the status and request id, which are enough to find the call in the
// service's log; it never carries the response body, which can echo input.
type APIError struct {
	// Op is the operation, such as "compute: disable service".
	Op string
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// RequestID is the X-Openstack-Request-Id of the response, if any.
	RequestID string
	// Reauth is set when the token expired and logging in again failed.
	Reauth bool
	// cause is kept for errors.Is on transport errors only.
	cause error
}

func (e *APIError) Error() string {
	switch {
	case e.Reauth:
		return fmt.Sprintf("%s: HTTP %d, and logging in again failed", e.Op, e.StatusCode)
	case e.StatusCode == 0:
		return fmt.Sprintf("%s: no response: %s", e.Op, transportCause(e.cause))
	case e.RequestID != "":
		return fmt.Sprintf("%s: HTTP %d (request %s)", e.Op, e.StatusCode, e.RequestID)
	default:
		return fmt.Sprintf("%s: HTTP %d", e.Op, e.StatusCode)
	}
}

// Unwrap exposes a transport error, such as a context cancellation.
func (e *APIError) Unwrap() error { return e.cause }

// IsNotFound tells whether err is an OpenStack 404.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict tells whether err is an OpenStack 409.
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

func statusOf(err error) int {
	var api *APIError
	if errors.As(err, &api) {
		return api.StatusCode
	}
	return 0
}

// wrap turns a gophercloud error into an *APIError for op, or returns nil.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	// A failed re-login does not unwrap to either of its two errors, and
	// both print response bodies and URLs, so it is taken apart here and
	// only the original status kept.
	if reauth, ok := asGophercloud[gophercloud.ErrUnableToReauthenticate](err); ok {
		out := &APIError{Op: op, Reauth: true}
		if original, ok := asGophercloud[gophercloud.ErrUnexpectedResponseCode](reauth.ErrOriginal); ok {
			out.StatusCode, out.RequestID = original.Actual, requestID(original.ResponseHeader)
		}
		return out
	}
	if unexpected, ok := asGophercloud[gophercloud.ErrUnexpectedResponseCode](err); ok {
		return &APIError{Op: op, StatusCode: unexpected.Actual, RequestID: requestID(unexpected.ResponseHeader)}
	}
	return &APIError{Op: op, cause: err}
}

// asGophercloud finds a gophercloud error of type T in err's chain, as a
// value or behind a pointer. Its error types have value methods, so both
// forms are errors, and gophercloud returns both: a response code by
// value, a failed re-login as a pointer. Matching one form only would let
// the other fall through to the transport case, which prints the error
// with its URLs and response bodies.
func asGophercloud[T error, PT interface {
	*T
	error
}](err error) (T, bool) {
	var v T
	if errors.As(err, &v) {
		return v, true
	}
	var p PT
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return v, false
}

func requestID(h http.Header) string {
	if h == nil {
		return ""
	}
	if id := h.Get("X-Openstack-Request-Id"); id != "" {
		return id
	}
	return h.Get("X-Compute-Request-Id")
}

// transportCause describes an error without a response. gophercloud's
// transport errors name the URL, which never carries a credential here
// (endpoints come from the catalog), but the password never appears in it.
func transportCause(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
