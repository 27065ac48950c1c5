// Package brokeradmin manages users of a RabbitMQ broker through its
// management HTTP API: the few calls a ControlPlane needs to give each
// compute cluster a broker user of its own. Errors name the call and the
// status code, never the API's address, the administrator's credentials or
// a password.
package brokeradmin

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Secret keys of a broker admin Secret (ControlPlane
// spec.services.nova.remoteCompute.brokerAdminSecretRef).
const (
	// KeyURL holds the management API's https:// base URL.
	KeyURL = "url"
	// KeyUsername holds the administrator's user name.
	KeyUsername = "username"
	// KeyPassword holds the administrator's password.
	KeyPassword = "password"
	// KeyCA holds the PEM CA bundle the API's certificate is checked
	// against; without it the system's roots are.
	KeyCA = "ca.crt"
)

// Permissions are a user's rights on one vhost, as regular expressions of
// the resource names it may configure, write to and read from.
type Permissions struct {
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// Client calls one broker's management API as its administrator.
type Client struct {
	base     *url.URL
	username string
	password string
	http     *http.Client
}

// New builds a Client from a broker admin Secret's data. It refuses a URL
// that is not https, so the administrator's password never travels in
// clear, and reports a missing key by name.
func New(data map[string][]byte) (*Client, error) {
	for _, k := range []string{KeyURL, KeyUsername, KeyPassword} {
		if len(data[k]) == 0 {
			return nil, fmt.Errorf("key %s is missing or empty", k)
		}
	}
	base, err := url.Parse(strings.TrimSpace(string(data[KeyURL])))
	if err != nil || base.Scheme != "https" || base.Host == "" || base.User != nil {
		// The parse error quotes the input; it is not passed on.
		return nil, fmt.Errorf("key %s is not an https:// URL without credentials", KeyURL)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := data[KeyCA]; len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("key %s holds no PEM certificate", KeyCA)
		}
		cfg.RootCAs = pool
	}
	return &Client{
		base: base, username: string(data[KeyUsername]), password: string(data[KeyPassword]),
		http: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}},
	}, nil
}

// User returns the tags of the named user, and whether it exists.
func (c *Client) User(ctx context.Context, name string) (tags []string, found bool, err error) {
	var out struct {
		Tags json.RawMessage `json:"tags"`
	}
	found, err = c.get(ctx, &out, "users", name)
	if err != nil || !found {
		return nil, found, err
	}
	return parseTags(out.Tags), true, nil
}

// PutUser creates the named user, or replaces the password and tags of an
// existing one. It grants no rights by itself: a user without the
// management tags cannot use this API, and one without permissions no
// vhost.
func (c *Client) PutUser(ctx context.Context, name, password string, tags []string) error {
	body := map[string]string{"password": password, "tags": strings.Join(tags, ",")}
	return c.send(ctx, http.MethodPut, body, "users", name)
}

// DeleteUser deletes the named user; one that does not exist is gone
// already.
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.send(ctx, http.MethodDelete, nil, "users", name)
}

// Permissions returns the user's rights on vhost, and whether it has any.
func (c *Client) Permissions(ctx context.Context, vhost, user string) (Permissions, bool, error) {
	var p Permissions
	found, err := c.get(ctx, &p, "permissions", vhost, user)
	return p, found, err
}

// SetPermissions sets the user's rights on vhost.
func (c *Client) SetPermissions(ctx context.Context, vhost, user string, p Permissions) error {
	return c.send(ctx, http.MethodPut, p, "permissions", vhost, user)
}

// parseTags reads a user's tags, which the API gives as a list (RabbitMQ
// 3.9 and later) or as one comma-separated string (earlier releases).
func parseTags(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var joined string
	if json.Unmarshal(raw, &joined) != nil || joined == "" {
		return nil
	}
	return strings.Split(joined, ",")
}

// endpoint joins the API's base with path segments, each escaped on its
// own: a vhost named "/" is one segment, %2F.
func (c *Client) endpoint(segments ...string) string {
	u := *c.base
	escaped := make([]string, len(segments))
	for i, s := range segments {
		escaped[i] = url.PathEscape(s)
	}
	u.RawPath = strings.TrimSuffix(c.base.EscapedPath(), "/") + "/api/" + strings.Join(escaped, "/")
	u.Path, _ = url.PathUnescape(u.RawPath)
	return u.String()
}

// get decodes a GET's answer into out; a 404 is "not found", not an error.
func (c *Client) get(ctx context.Context, out any, segments ...string) (bool, error) {
	resp, err := c.do(ctx, http.MethodGet, nil, segments...)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, statusError(http.MethodGet, segments, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return false, fmt.Errorf("broker API GET %s: the answer does not decode", segments[0])
	}
	return true, nil
}

// send makes a request whose answer carries nothing Anvil reads. A DELETE
// of something absent succeeds.
func (c *Client) send(ctx context.Context, method string, body any, segments ...string) error {
	resp, err := c.do(ctx, method, body, segments...)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 == 2 || (method == http.MethodDelete && resp.StatusCode == http.StatusNotFound) {
		return nil
	}
	return statusError(method, segments, resp.StatusCode)
}

func (c *Client) do(ctx context.Context, method string, body any, segments ...string) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint(segments...), reader)
	if err != nil {
		return nil, errors.New("broker API: the request cannot be built")
	}
	req.SetBasicAuth(c.username, c.password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// url.Error names the address, which the Secret's writer chose;
		// what failed is reported without it.
		return nil, fmt.Errorf("broker API %s %s: the management API cannot be reached", method, segments[0])
	}
	return resp, nil
}

// statusError names the call by its kind of resource, not its full path.
func statusError(method string, segments []string, code int) error {
	return fmt.Errorf("broker API %s %s: status %d", method, segments[0], code)
}
