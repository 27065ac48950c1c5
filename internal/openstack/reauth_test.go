package openstack_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/openstack"
)

// The reauthentication path of TestIntegrationIdentityReauthFailureLeaksNothing
// without the service set: the same proxy in front of a stand-in Keystone
// that issues one token and refuses every later login, echoing the request
// (password included) in its 401 body. It keeps the path through
// gophercloud's own request code covered where only unit tests run; the
// integration test is the proof against the real Keystone.
func TestReauthFailureThroughGophercloudLeaksNothing(t *testing.T) {
	const password = "standin-PASSWORD-3"
	var mu sync.Mutex
	logins := 0
	keystone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.URL.Path != "/v3/auth/tokens" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		logins++
		first := logins == 1
		mu.Unlock()
		if first {
			w.Header().Set("X-Subject-Token", "standin-token")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"token": {"expires_at": "2099-01-01T00:00:00.000000Z", "catalog": []}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, `{"error": {"code": 401, "message": "refused %s"}}`, strings.ReplaceAll(string(body), `"`, `'`))
	}))
	t.Cleanup(keystone.Close)

	creds := openstack.Credentials{
		AuthURL: keystone.URL + "/v3", Username: "anvil-standin", Password: password,
		ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default",
	}
	fault := openstacktest.NewFront(t, creds.AuthURL, nil, bodySecret)
	creds.AuthURL = fault.AuthURL(urlCredential)
	s, err := openstack.NewIdentitySession(t.Context(), creds)
	if err != nil {
		t.Fatalf("the first login through the proxy failed: %v", err)
	}
	fault.Expire()
	_, err = s.DomainID(t.Context(), "Default")
	if got, want := fault.Log(), []string{"POST /v3/auth/tokens 201", "GET /v3/domains 401", "POST /v3/auth/tokens 401"}; !slices.Equal(got, want) {
		t.Fatalf("the proxy saw %q, want a login, a refused call and a refused re-login %q", got, want)
	}
	assertReauthHidden(t, err, password)
}
