package targetcluster

import (
	"errors"
	"net/url"
)

type urlErrorForTest struct{}

func (urlErrorForTest) wrap() error {
	return &url.Error{Op: "Get", URL: "https://user:pw@127.0.0.1:1/readyz", Err: errors.New("connection refused")}
}
