package openstack_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// Markers the fault injector plants where gophercloud's errors would print
// them: in response bodies, and as the password of the auth URL's userinfo.
const (
	bodySecret = "body-SECRET-reauth-7f3a"
	urlSecret  = "url-SECRET-reauth-c41d"
)

// A session whose token stops working logs in again, and when that fails
// too, gophercloud reports both responses with their URLs and bodies. None
// of that may reach a condition: controllers put the text of the error a
// Session call returns into condition messages as it is (the ControlPlane's
// NovaReady after "on <cluster>: ", a pool's step conditions after what
// the step was doing), so the test checks that text, and the condition
// flow records from it, rather than driving a controller there.
//
// The session logs in through a loopback proxy in front of the real
// Keystone, with a user of its own. The proxy then answers the next call
// with 401, as Keystone does for an expired token; meanwhile the user's
// password has been rotated, so the re-login that 401 sets off is refused
// by the real Keystone. The proxy adds the body secret to both 401 bodies,
// and the auth URL carries the URL secret, so both errors gophercloud
// builds hold a body secret, the user's password and a URL credential.
func TestIntegrationIdentityReauthFailureLeaksNothing(t *testing.T) {
	cl, admin := requireCloud(t)
	ctx := t.Context()
	user, oldPassword := unique("anvil-reauth"), "reauth-PASSWORD-old-1"
	cl.ServiceUser(user, oldPassword)

	fault := newReauthFault(t, cloud.AdminCredentials())
	creds := cloud.AdminCredentials()
	creds.Username, creds.Password, creds.ProjectName = user, oldPassword, "service"
	creds.UserDomainName, creds.ProjectDomainName = "Default", "Default"
	creds.AuthURL = fault.authURL(t)
	creds.CABundle = nil
	s, err := openstack.NewIdentitySession(ctx, creds)
	if err != nil {
		t.Fatalf("the first login through the proxy failed: %v", err)
	}
	if _, err := admin.EnsureUser(ctx, user, "default", "reauth-PASSWORD-new-2"); err != nil {
		t.Fatalf("rotating the user's password: %v", err)
	}

	fault.expireToken()
	_, err = s.DomainID(ctx, "Default")
	if got, want := fault.log(), []string{"POST /v3/auth/tokens 201", "GET /v3/domains 401", "POST /v3/auth/tokens 401"}; !slices.Equal(got, want) {
		t.Fatalf("the proxy saw %q, want a login, a refused call and a refused re-login %q", got, want)
	}
	assertReauthHidden(t, err, oldPassword)
}

// assertReauthHidden fails unless err reports a 401 whose re-login failed
// and neither err nor the condition flow records from it carries a body
// secret, the URL secret, the password or any URL.
func assertReauthHidden(t *testing.T, err error, password string) {
	t.Helper()
	var api *openstack.APIError
	if !errors.As(err, &api) || !api.Reauth || api.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v (%T), want an *openstack.APIError for a 401 whose re-login failed", err, err)
	}
	var conditions []metav1.Condition
	flow.Conditions{List: &conditions}.Record("KeystoneReady", flow.Fail("KeystoneReady", "KeystoneError", fmt.Errorf("on compute-a: %w", err)))
	texts := map[string]string{"the error": err.Error(), "the error as %+v": fmt.Sprintf("%+v", err), "the condition": conditions[0].Message}
	for what, text := range texts {
		for _, secret := range []string{bodySecret, urlSecret, password, "://"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s carries %q: %s", what, secret, text)
			}
		}
	}
	if !strings.Contains(conditions[0].Message, "HTTP 401, and logging in again failed") {
		t.Errorf("the condition %q does not say what failed", conditions[0].Message)
	}
}

// reauthFault is a reverse proxy on 127.0.0.1 in front of Keystone. It
// passes logins through, answers every other call with 401 once told the
// token has expired, and adds bodySecret to each 401 it sends, its own and
// Keystone's. It logs each request with the status it got.
type reauthFault struct {
	srv     *httptest.Server
	mu      sync.Mutex
	expired bool
	seen    []string
}

func newReauthFault(t *testing.T, upstream openstack.Credentials) *reauthFault {
	t.Helper()
	target, err := url.Parse(upstream.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(upstream.CABundle) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(upstream.CABundle)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	f := &reauthFault{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
			// The auth URL's userinfo arrives as basic auth, which is the
			// test's marker and nothing Keystone should read.
			r.Out.Header.Del("Authorization")
		},
		Transport: transport,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusUnauthorized {
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil {
					return err
				}
				body = append(body, []byte(" "+bodySecret)...)
				resp.Body = io.NopCloser(bytes.NewReader(body))
				resp.ContentLength = int64(len(body))
				resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
			f.record(resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)
			return nil
		},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		login := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/auth/tokens")
		f.mu.Lock()
		expired := f.expired
		f.mu.Unlock()
		if login || !expired {
			proxy.ServeHTTP(w, r)
			return
		}
		f.record(r.Method, r.URL.Path, http.StatusUnauthorized)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, `{"error": {"code": 401, "title": "Unauthorized", "message": "token expired %s"}}`, bodySecret)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// authURL is the proxy's /v3 with a credential in its userinfo.
func (f *reauthFault) authURL(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = url.UserPassword("anvil-url-user", urlSecret), "/v3"
	return u.String()
}

// expireToken makes every later call but a login fail with 401.
func (f *reauthFault) expireToken() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
}

func (f *reauthFault) record(method, path string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, fmt.Sprintf("%s %s %d", method, path, status))
}

// log returns every request the proxy answered, with its status, in order.
func (f *reauthFault) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}
