package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
)

// Pinned microversions: every call states the API version it was written
// against, so a newer cloud does not change what the call means.
const (
	// computeMicroversion has service UUIDs (2.53) and hypervisor paging.
	computeMicroversion = "2.53"
	// placementMicroversion has custom traits (1.6) and provider names.
	placementMicroversion = "1.6"
)

// Credentials authenticate a Session. They are held in memory only and
// never logged or formatted.
type Credentials struct {
	AuthURL           string
	Username          string
	Password          string
	ProjectName       string
	UserDomainName    string
	ProjectDomainName string
	Region            string
	// Interface selects the catalog rows: "internal", "public" or "admin";
	// empty means public.
	Interface string
	// CABundle is the PEM bundle trusted for https endpoints; empty means
	// the system roots.
	CABundle []byte
}

// Session is one authenticated connection to a cloud. It implements every
// interface of this package and is safe for concurrent use; a SessionCache
// shares one across passes until its token nears expiry.
type Session struct {
	provider  *gophercloud.ProviderClient
	identity  *gophercloud.ServiceClient
	compute   *gophercloud.ServiceClient
	placement *gophercloud.ServiceClient
}

// NewSession authenticates once and resolves the identity, compute and
// placement endpoints from the catalog.
func NewSession(ctx context.Context, c Credentials) (*Session, error) {
	provider, err := authenticate(ctx, c)
	if err != nil {
		return nil, err
	}
	eo := gophercloud.EndpointOpts{Region: c.Region, Availability: availability(c.Interface)}
	s := &Session{provider: provider}
	if s.identity, err = gcopenstack.NewIdentityV3(provider, eo); err != nil {
		return nil, wrap("identity: find endpoint", err)
	}
	if s.compute, err = gcopenstack.NewComputeV2(provider, eo); err != nil {
		return nil, wrap("compute: find endpoint", err)
	}
	if s.placement, err = gcopenstack.NewPlacementV1(provider, eo); err != nil {
		return nil, wrap("placement: find endpoint", err)
	}
	if t, ok := provider.HTTPClient.Transport.(*countingTransport); ok {
		t.endpoints.Store(&map[string]string{
			s.identity.Endpoint: serviceIdentity, s.compute.Endpoint: serviceCompute, s.placement.Endpoint: servicePlacement,
		})
	}
	return s, nil
}

// NewIdentitySession authenticates once and talks to Keystone at the auth
// URL itself, without the catalog: account work needs no other service,
// and the URL the caller trusts is the one it dials.
func NewIdentitySession(ctx context.Context, c Credentials) (*Session, error) {
	provider, err := authenticate(ctx, c)
	if err != nil {
		return nil, err
	}
	identity, err := gcopenstack.NewIdentityV3(provider, gophercloud.EndpointOpts{})
	if err != nil {
		return nil, wrap("identity: find endpoint", err)
	}
	return &Session{provider: provider, identity: identity}, nil
}

// authenticate returns a provider client holding a project-scoped token.
func authenticate(ctx context.Context, c Credentials) (*gophercloud.ProviderClient, error) {
	if c.AuthURL == "" || c.Username == "" || c.Password == "" {
		return nil, errors.New("openstack: credentials need an auth URL, a user name and a password")
	}
	provider, err := gcopenstack.NewClient(c.AuthURL)
	if err != nil {
		return nil, wrap("identity: parse auth URL", err)
	}
	counting := &countingTransport{}
	provider.HTTPClient = http.Client{Timeout: 30 * time.Second, Transport: counting}
	if len(c.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CABundle) {
			return nil, errors.New("openstack: the CA bundle holds no PEM certificate")
		}
		counting.next = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: c.AuthURL,
		Username:         c.Username,
		Password:         c.Password,
		DomainName:       c.UserDomainName,
		Scope:            &gophercloud.AuthScope{ProjectName: c.ProjectName, DomainName: c.ProjectDomainName},
		// Re-authenticate on expiry instead of failing the rest of the pass.
		AllowReauth: true,
	}
	if err := gcopenstack.Authenticate(ctx, provider, opts); err != nil {
		return nil, wrap("identity: authenticate", err)
	}
	return provider, nil
}

func availability(iface string) gophercloud.Availability {
	switch iface {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

// computeAt returns a copy of the compute client pinned to the compute
// microversion; copies keep concurrent calls from racing on the field.
func (s *Session) computeAt() *gophercloud.ServiceClient {
	c := *s.compute
	c.Microversion = computeMicroversion
	return &c
}

func (s *Session) placementAt() *gophercloud.ServiceClient {
	c := *s.placement
	c.Microversion = placementMicroversion
	return &c
}
