package openstack

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

func TestWrap(t *testing.T) {
	unexpected := func(code int, header http.Header) error {
		return gophercloud.ErrUnexpectedResponseCode{
			URL: "http://127.0.0.1:8774/v2.1/os-services", Method: "PUT", Actual: code,
			Body:           []byte(`{"error": "password hunter2 rejected"}`),
			ResponseHeader: header,
		}
	}
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantText   []string
	}{
		{name: "nil stays nil"},
		{name: "404 with a compute request id", err: unexpected(404, http.Header{"X-Compute-Request-Id": {"req-1"}}),
			wantStatus: 404, wantText: []string{"compute: op", "HTTP 404", "req-1"}},
		{name: "409 with an openstack request id", err: unexpected(409, http.Header{"X-Openstack-Request-Id": {"req-2"}}),
			wantStatus: 409, wantText: []string{"HTTP 409", "req-2"}},
		{name: "no headers", err: unexpected(500, nil), wantStatus: 500, wantText: []string{"HTTP 500"}},
		{name: "transport error", err: context.DeadlineExceeded, wantText: []string{"no response", "deadline"}},
		{name: "a failed re-login after a 401", err: gophercloud.ErrUnableToReauthenticate{
			ErrOriginal: unexpected(401, nil),
			ErrReauth: gophercloud.ErrUnexpectedResponseCode{URL: "https://nova:hunter2@keystone.example.com/v3/auth/tokens", Method: "POST",
				Actual: 401, Body: []byte(`{"error": "hunter2"}`)},
		}, wantStatus: 401, wantText: []string{"HTTP 401", "logging in again failed"}},
		// gophercloud's request path returns a failed re-login as a
		// pointer; the value form above is what errors.As would build.
		{name: "a failed re-login as gophercloud returns it", err: &gophercloud.ErrUnableToReauthenticate{
			ErrOriginal: unexpected(401, http.Header{"X-Openstack-Request-Id": {"req-3"}}),
			ErrReauth: gophercloud.ErrUnexpectedResponseCode{URL: "https://nova:hunter2@keystone.example.com/v3/auth/tokens", Method: "POST",
				Actual: 401, Body: []byte(`{"error": "hunter2"}`)},
		}, wantStatus: 401, wantText: []string{"HTTP 401", "logging in again failed"}},
		{name: "a response code behind a pointer", err: &gophercloud.ErrErrorAfterReauthentication{ErrOriginal: &gophercloud.ErrUnexpectedResponseCode{
			URL: "https://nova:hunter2@nova.example.com/v2.1/os-services", Actual: 409, Body: []byte("hunter2")}},
			wantStatus: 409, wantText: []string{"HTTP 409"}},
		{name: "an error after a successful re-login", err: gophercloud.ErrErrorAfterReauthentication{ErrOriginal: unexpected(403, nil)},
			wantStatus: 403, wantText: []string{"HTTP 403"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wrap("compute: op", tt.err)
			if tt.err == nil {
				if err != nil {
					t.Fatalf("wrap(nil) = %v", err)
				}
				return
			}
			if statusOf(err) != tt.wantStatus {
				t.Errorf("status = %d, want %d", statusOf(err), tt.wantStatus)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "://") {
				t.Errorf("a response body or a URL leaked into %q", err)
			}
		})
	}
	if !IsNotFound(wrap("x", unexpected(404, nil))) || IsNotFound(wrap("x", unexpected(409, nil))) || !IsConflict(wrap("x", unexpected(409, nil))) {
		t.Error("status predicates disagree")
	}
	if ignoreNotFound(wrap("x", unexpected(404, nil))) != nil {
		t.Error("a 404 was not ignored")
	}
	if !errors.Is(wrap("x", context.Canceled), context.Canceled) {
		t.Error("a transport error lost its cause")
	}
}

func TestNewSessionRefusesIncompleteCredentials(t *testing.T) {
	_, err := NewSession(t.Context(), Credentials{AuthURL: "http://127.0.0.1:5000/v3", Username: "admin"})
	if err == nil || strings.Contains(err.Error(), "admin") {
		t.Errorf("err = %v", err)
	}
	_, err = NewSession(t.Context(), Credentials{AuthURL: "http://127.0.0.1:5000/v3", Username: "a", Password: "p", CABundle: []byte("not pem")})
	if err == nil || !strings.Contains(err.Error(), "PEM") {
		t.Errorf("err = %v", err)
	}
}
