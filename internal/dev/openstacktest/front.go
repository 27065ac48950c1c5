package openstacktest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Front is a reverse proxy on 127.0.0.1 in front of a Keystone. A test
// gives a client the Front's auth URL and can then make Keystone look as if
// the client's token had expired: every call but a login gets 401. Every
// 401 it sends, its own and Keystone's, carries Marker in its body, so a
// test can look for response bodies where they must not go.
type Front struct {
	// Marker is what each 401 body carries.
	Marker string

	srv      *httptest.Server
	keystone *url.URL

	mu      sync.Mutex
	expired bool
	seen    []string
}

// NewFront starts a Front before the Keystone at authURL, trusting caPEM
// for an https Keystone when it is not empty. It stops with the test.
func NewFront(tb testing.TB, authURL string, caPEM []byte, marker string) *Front {
	tb.Helper()
	target, err := url.Parse(authURL)
	if err != nil || target.Host == "" {
		tb.Fatalf("the Front needs Keystone's URL, got %q", authURL)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	f := &Front{Marker: marker, keystone: &url.URL{Scheme: target.Scheme, Host: target.Host}}
	proxy := &httputil.ReverseProxy{Rewrite: f.rewrite, Transport: transport, ModifyResponse: f.modify}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.isExpired() && !isLogin(r) {
			f.record(r.Method, r.URL.Path, http.StatusUnauthorized)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"error": {"code": 401, "title": "Unauthorized", "message": "token expired %s"}}`, f.Marker)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(f.srv.Close)
	return f
}

// AuthURL is the Front's Keystone /v3, with user info when it is not nil.
func (f *Front) AuthURL(user *url.Userinfo) string {
	u, _ := url.Parse(f.srv.URL)
	u.User, u.Path = user, "/v3"
	return u.String()
}

// Expire makes every later call but a login fail with 401, as a cloud
// answers a token it no longer honours.
func (f *Front) Expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
}

// Log returns every request the Front answered, as "METHOD path status",
// in order.
func (f *Front) Log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func (f *Front) isExpired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expired
}

func (f *Front) record(method, path string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, fmt.Sprintf("%s %s %d", method, path, status))
}

// rewrite sends a request on to Keystone.
func (f *Front) rewrite(r *httputil.ProxyRequest) {
	r.SetURL(f.keystone)
	// User info in the auth URL arrives as basic auth: a marker of the
	// test, nothing Keystone should read. A compressed body could not be
	// marked.
	r.Out.Header.Del("Authorization")
	r.Out.Header.Del("Accept-Encoding")
}

// modify adds the marker to every 401 Keystone sends.
func (f *Front) modify(resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized {
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		body = append(body, []byte(" "+f.Marker)...)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	f.record(resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)
	return nil
}

// isLogin tells a password login, which the Front always passes on.
func isLogin(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/auth/tokens")
}
