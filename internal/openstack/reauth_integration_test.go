package openstack_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/openstack"
)

// Markers the fault injector plants where gophercloud's errors would print
// them: in response bodies, and as the password of the auth URL's userinfo.
const (
	bodySecret = "body-SECRET-reauth-7f3a"
	urlSecret  = "url-SECRET-reauth-c41d"
)

// urlCredential is the user info the auth URL carries.
var urlCredential = url.UserPassword("anvil-url-user", urlSecret)

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

	admin0 := cloud.AdminCredentials()
	fault := openstacktest.NewFront(t, admin0.AuthURL, admin0.CABundle, bodySecret)
	creds := cloud.AdminCredentials()
	creds.Username, creds.Password, creds.ProjectName = user, oldPassword, "service"
	creds.UserDomainName, creds.ProjectDomainName = "Default", "Default"
	creds.AuthURL = fault.AuthURL(urlCredential)
	creds.CABundle = nil
	s, err := openstack.NewIdentitySession(ctx, creds)
	if err != nil {
		t.Fatalf("the first login through the proxy failed: %v", err)
	}
	if _, err := admin.EnsureUser(ctx, user, "default", "reauth-PASSWORD-new-2"); err != nil {
		t.Fatalf("rotating the user's password: %v", err)
	}

	fault.Expire()
	_, err = s.DomainID(ctx, "Default")
	if got, want := fault.Log(), []string{"POST /v3/auth/tokens 201", "GET /v3/domains 401", "POST /v3/auth/tokens 401"}; !slices.Equal(got, want) {
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
