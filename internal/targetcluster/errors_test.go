package targetcluster

import (
	"errors"
	"net/url"
	"testing"
)

type urlErrorForTest struct{}

func (urlErrorForTest) wrap() error {
	return &url.Error{Op: "Get", URL: "https://user:pw@127.0.0.1:1/readyz", Err: errors.New("connection refused")}
}

func TestSanitizeDropsURLs(t *testing.T) {
	err := &urlErrorForTest{}
	if got := sanitize(err.wrap()); got != "Get: connection refused" {
		t.Errorf("sanitize = %q", got)
	}
}
