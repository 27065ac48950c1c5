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
	var reauth gophercloud.ErrUnableToReauthenticate
	if errors.As(err, &reauth) {
		out := &APIError{Op: op, Reauth: true}
		var original gophercloud.ErrUnexpectedResponseCode
		if errors.As(reauth.ErrOriginal, &original) {
			out.StatusCode, out.RequestID = original.Actual, requestID(original.ResponseHeader)
		}
		return out
	}
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &unexpected) {
		return &APIError{Op: op, StatusCode: unexpected.Actual, RequestID: requestID(unexpected.ResponseHeader)}
	}
	return &APIError{Op: op, cause: err}
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
