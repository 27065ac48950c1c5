package controlplane

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// Keys of the admin credentials Secret and their defaults. Only password
// has no default: an admin without one cannot log in.
const (
	adminUsernameKey          = "username"
	adminProjectNameKey       = "project_name"
	adminUserDomainNameKey    = "user_domain_name"
	adminProjectDomainNameKey = "project_domain_name"
	defaultAdminUser          = "admin"
	defaultAdminProject       = "admin"
	defaultDomain             = "Default"
	defaultRegion             = "RegionOne"
)

// Keys of the hypervisor operator's auth Secret: exactly these seven, one
// per value of the hypervisor operator's chart.
const (
	authURLKey           = "auth_url"
	authUsernameKey      = "username"
	authUserDomainKey    = "user_domain_name"
	authProjectKey       = "project_name"
	authProjectDomainKey = "project_domain_name"
	authRegionKey        = "region_name"
	authPasswordKey      = "password"
)

// HypervisorOperatorAuthName is the auth Secret beside the Nova, and the
// name of every copy on a compute cluster.
func HypervisorOperatorAuthName(cp *c5c3v1alpha1.ControlPlane) string {
	return cp.Name + c5c3v1alpha1.HypervisorOperatorAuthSuffix
}

// HypervisorOperatorCredentialsName is the Secret holding the account's
// generated password.
func HypervisorOperatorCredentialsName(cp *c5c3v1alpha1.ControlPlane) string {
	return cp.Name + c5c3v1alpha1.HypervisorOperatorCredentialsSuffix
}

// AdminCredentials turns the admin credentials Secret's data into the
// credentials Anvil logs in with at the internal Keystone endpoint, and
// returns the admin domain the accounts are created in. It is pure, so the
// defaults are table-tested; its errors name keys, never values.
func AdminCredentials(ks *c5c3v1alpha1.KeystoneSpec, data map[string][]byte) (openstack.Credentials, string, error) {
	password := string(data[passwordKey])
	if password == "" {
		return openstack.Credentials{}, "", errors.New("key password is missing or empty")
	}
	value := func(key, def string) string { return cmp.Or(string(data[key]), def) }
	creds := openstack.Credentials{
		AuthURL:           ks.InternalEndpoint,
		Username:          value(adminUsernameKey, defaultAdminUser),
		Password:          password,
		ProjectName:       value(adminProjectNameKey, defaultAdminProject),
		UserDomainName:    value(adminUserDomainNameKey, defaultDomain),
		ProjectDomainName: value(adminProjectDomainNameKey, defaultDomain),
		Region:            ks.Region,
		Interface:         "internal",
	}
	return creds, creds.UserDomainName, nil
}

// BuildHypervisorOperatorAuth renders the auth Secret's data: the seven
// keys of the hypervisor operator's chart. auth_url is the public Keystone
// URL once Keystone is published, because the hypervisor operator runs on
// compute clusters; the internal one before that.
func BuildHypervisorOperatorAuth(cp *c5c3v1alpha1.ControlPlane, adminDomain, password string) map[string][]byte {
	ks := cp.Spec.Services.Keystone
	return map[string][]byte{
		authURLKey:           []byte(cmp.Or(PublicKeystoneURL(ks), ks.InternalEndpoint)),
		authUsernameKey:      []byte(c5c3v1alpha1.HypervisorOperatorUser),
		authUserDomainKey:    []byte(adminDomain),
		authProjectKey:       []byte(c5c3v1alpha1.HypervisorOperatorProject),
		authProjectDomainKey: []byte(adminDomain),
		authRegionKey:        []byte(cmp.Or(ks.Region, defaultRegion)),
		authPasswordKey:      []byte(password),
	}
}

// AccountDescription is the mark a ControlPlane leaves on the Keystone
// users and projects it creates. Keystone has no labels; the description
// is how Anvil later tells its own accounts from same-named foreign ones.
func AccountDescription(cp *c5c3v1alpha1.ControlPlane) string {
	return fmt.Sprintf("Managed by Anvil for ControlPlane %s/%s; do not edit.", cp.Namespace, cp.Name)
}

// randomSecret returns 32 characters of URL-safe base64 from crypto/rand:
// nothing an INI file, an environment variable or oslo.config would read
// specially.
func randomSecret() (string, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}
