package openstacktest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
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

// upstreamPrefix starts the path of every catalog endpoint the Front
// rewrote: /_up/<n>/<path> goes to upstream n at <path>.
const upstreamPrefix = "/_up/"

// Front is a reverse proxy on 127.0.0.1 in front of a cloud: Keystone at
// its root, and every endpoint of the catalogs Keystone hands out, which
// it rewrites to point back at itself. A test gives a client the Front's
// auth URL and can then make the cloud look as if the client's token had
// expired: every call but a login gets 401. Every 401 it sends, its own
// and the cloud's, carries Marker in its body, so a test can look for
// response bodies where they must not go.
type Front struct {
	// Marker is what each 401 body carries.
	Marker string

	srv       *httptest.Server
	keystone  *url.URL
	transport http.RoundTripper

	mu        sync.Mutex
	expired   bool
	seen      []string
	upstreams []string
}

// NewFront starts a Front before the Keystone at authURL (its /v3 path is
// kept), trusting caPEM for https upstreams when it is not empty. It stops
// with the test.
func NewFront(tb testing.TB, authURL string, caPEM []byte, marker string) *Front {
	tb.Helper()
	f, err := StartFront(authURL, caPEM, marker)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	return f
}

// StartFront is NewFront for a Front that outlives one test, such as one
// a package's operator is set up with; Close stops it.
func StartFront(authURL string, caPEM []byte, marker string) (*Front, error) {
	target, err := url.Parse(authURL)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("the Front needs Keystone's URL, got %q", authURL)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	f := &Front{Marker: marker, keystone: &url.URL{Scheme: target.Scheme, Host: target.Host}, transport: transport}
	proxy := &httputil.ReverseProxy{Rewrite: f.rewrite, Transport: transport, ModifyResponse: f.modify}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.isExpired() && !isLogin(r) {
			f.record(r.Method, upstreamPath(r.URL.Path), http.StatusUnauthorized)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"error": {"code": 401, "title": "Unauthorized", "message": "token expired %s"}}`, f.Marker)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return f, nil
}

// Close stops the Front.
func (f *Front) Close() { f.srv.Close() }

// AuthURL is the Front's Keystone /v3, with user info when it is not nil.
func (f *Front) AuthURL(user *url.Userinfo) string {
	u, _ := url.Parse(f.srv.URL)
	u.User, u.Path = user, "/v3"
	return u.String()
}

// Host is the Front's host:port.
func (f *Front) Host() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// Expire makes every later call but a login fail with 401, as a cloud
// answers a token it no longer honours.
func (f *Front) Expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
}

// Log returns every request the Front answered, as "METHOD path status",
// in order; a catalog endpoint's path is the upstream's.
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

// rewrite sends a request to Keystone, or to the upstream its path names.
func (f *Front) rewrite(r *httputil.ProxyRequest) {
	target, path := f.keystone, r.In.URL.Path
	if n, rest, ok := f.route(path); ok {
		target, path = n, rest
	}
	r.SetURL(target)
	r.Out.URL.Path, r.Out.URL.RawPath = path, ""
	// User info in the auth URL arrives as basic auth: a marker of the
	// test, nothing the cloud should read. A compressed body could not be
	// rewritten.
	r.Out.Header.Del("Authorization")
	r.Out.Header.Del("Accept-Encoding")
}

// modify marks every 401 and points the catalog of a new token at the
// Front.
func (f *Front) modify(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		body = append(body, []byte(" "+f.Marker)...)
	case isLogin(resp.Request) && resp.StatusCode == http.StatusCreated:
		if body, err = f.rewriteCatalog(body); err != nil {
			return err
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	f.record(resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)
	return nil
}

// rewriteCatalog replaces the URL of every endpoint in a token body with
// one on the Front.
func (f *Front) rewriteCatalog(body []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the Front could not read a token body: %w", err)
	}
	token, _ := doc["token"].(map[string]any)
	catalog, _ := token["catalog"].([]any)
	for _, svc := range catalog {
		endpoints, _ := svc.(map[string]any)["endpoints"].([]any)
		for _, ep := range endpoints {
			m, _ := ep.(map[string]any)
			if raw, ok := m["url"].(string); ok {
				m["url"] = f.frontURL(raw)
			}
		}
	}
	return json.Marshal(doc)
}

// frontURL is raw's place on the Front: the upstream's number, then its
// path.
func (f *Front) frontURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	base := u.Scheme + "://" + u.Host
	f.mu.Lock()
	n := slices.Index(f.upstreams, base)
	if n < 0 {
		f.upstreams = append(f.upstreams, base)
		n = len(f.upstreams) - 1
	}
	f.mu.Unlock()
	return f.srv.URL + upstreamPrefix + strconv.Itoa(n) + u.Path
}

// route resolves a path on the Front to its upstream and the upstream's
// path; ok is false for Keystone's own paths.
func (f *Front) route(path string) (*url.URL, string, bool) {
	rest, found := strings.CutPrefix(path, upstreamPrefix)
	if !found {
		return nil, "", false
	}
	num, tail, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(num)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil || n < 0 || n >= len(f.upstreams) {
		return nil, "", false
	}
	u, _ := url.Parse(f.upstreams[n])
	return u, "/" + tail, true
}

// upstreamPath strips the Front's routing from a path, for the log.
func upstreamPath(path string) string {
	if rest, found := strings.CutPrefix(path, upstreamPrefix); found {
		_, tail, _ := strings.Cut(rest, "/")
		return "/" + tail
	}
	return path
}

// isLogin tells a password login, which the Front always passes on.
func isLogin(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/auth/tokens")
}
