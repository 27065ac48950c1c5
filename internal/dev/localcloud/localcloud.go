// Package localcloud reads the state directory of the service set that
// hack/openstack/openstack.sh runs on 127.0.0.1: the endpoints it wrote to
// endpoints.env and the admin credentials in clouds.yaml. The tests and the
// devstack both read it, so they agree on where everything is.
package localcloud

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/anvil/anvil/internal/openstack"
)

// Well-known keys of endpoints.env. Values are addresses and file paths;
// files named by a *_FILE key may hold secrets and are read on demand.
const (
	KeystoneURL       = "ANVIL_OPENSTACK_KEYSTONE_URL"
	KeystonePublicURL = "ANVIL_OPENSTACK_KEYSTONE_PUBLIC_URL"
	KeystoneCA        = "ANVIL_OPENSTACK_KEYSTONE_CA"
	PlacementURL      = "ANVIL_OPENSTACK_PLACEMENT_URL"
	NovaURL           = "ANVIL_OPENSTACK_NOVA_URL"
	NeutronURL        = "ANVIL_OPENSTACK_NEUTRON_URL"
	ImageURL          = "ANVIL_OPENSTACK_IMAGE_URL"
	ImageID           = "ANVIL_OPENSTACK_IMAGE_ID"
	Region            = "ANVIL_OPENSTACK_REGION"
	RabbitMQCA        = "ANVIL_OPENSTACK_RABBITMQ_CA"
	// RabbitMQManagementURL is the broker's management API, over TLS
	// checked against RabbitMQCA.
	RabbitMQManagementURL = "ANVIL_OPENSTACK_RABBITMQ_MANAGEMENT_URL"
	TransportURLFile      = "ANVIL_OPENSTACK_TRANSPORT_URL_FILE"
	TransportURLTLSFile   = "ANVIL_OPENSTACK_TRANSPORT_URL_TLS_FILE"
	MariaDBPort           = "ANVIL_OPENSTACK_MARIADB_PORT"
	NovaConf              = "ANVIL_OPENSTACK_NOVA_CONF"
	CloudsYAML            = "ANVIL_OPENSTACK_CLOUDS_YAML"
)

// Cloud is what a running set's state directory says about it.
type Cloud struct {
	// Dir is the state directory.
	Dir string
	// Endpoints are the entries of endpoints.env; they hold no secret.
	Endpoints map[string]string
	// Admin are the cloud admin's credentials from clouds.yaml.
	Admin openstack.Credentials
}

// Load reads a state directory the services were started with.
func Load(dir string) (*Cloud, error) {
	env, err := readEnvFile(filepath.Join(dir, "endpoints.env"))
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "clouds.yaml"))
	if err != nil {
		return nil, err
	}
	var clouds struct {
		Clouds map[string]struct {
			Auth struct {
				AuthURL           string `json:"auth_url"`
				Username          string `json:"username"`
				Password          string `json:"password"`
				ProjectName       string `json:"project_name"`
				UserDomainName    string `json:"user_domain_name"`
				ProjectDomainName string `json:"project_domain_name"`
			} `json:"auth"`
			Region    string `json:"region_name"`
			Interface string `json:"interface"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal(raw, &clouds); err != nil {
		// The parser's message could quote the password line.
		return nil, errors.New("clouds.yaml does not parse")
	}
	a, ok := clouds.Clouds["anvil"]
	if !ok {
		return nil, errors.New("clouds.yaml has no cloud named anvil")
	}
	return &Cloud{Dir: dir, Endpoints: env, Admin: openstack.Credentials{
		AuthURL: a.Auth.AuthURL, Username: a.Auth.Username, Password: a.Auth.Password,
		ProjectName: a.Auth.ProjectName, UserDomainName: a.Auth.UserDomainName, ProjectDomainName: a.Auth.ProjectDomainName,
		Region: a.Region, Interface: a.Interface,
	}}, nil
}

// TransportURL returns the bus URL: the plain listener, or the TLS one. It
// carries a password; callers never log it.
func (c *Cloud) TransportURL(tls bool) (string, error) {
	key := TransportURLFile
	if tls {
		key = TransportURLTLSFile
	}
	raw, err := os.ReadFile(c.Endpoints[key])
	return strings.TrimSpace(string(raw)), err
}

// ServicePassword returns the Keystone password of a service user the set
// created, such as "nova".
func (c *Cloud) ServicePassword(user string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(c.Dir, "secrets", "keystone-"+user))
	if err != nil {
		return "", fmt.Errorf("reading the %s service user's password file: %w", user, err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// BrokerAdmin returns the data of a broker admin Secret for the set's
// broker (brokeradmin's keys): its management API, its administrator
// anvil-admin with that user's password, and the broker's CA.
func (c *Cloud) BrokerAdmin() (map[string][]byte, error) {
	pw, err := os.ReadFile(filepath.Join(c.Dir, "secrets", "rabbitmq-admin"))
	if err != nil {
		return nil, fmt.Errorf("reading the broker administrator's password file: %w", err)
	}
	ca, err := os.ReadFile(c.Endpoints[RabbitMQCA])
	if err != nil {
		return nil, err
	}
	if c.Endpoints[RabbitMQManagementURL] == "" {
		return nil, errors.New("endpoints.env names no management API; restart the set with this openstack.sh")
	}
	return map[string][]byte{
		"url": []byte(c.Endpoints[RabbitMQManagementURL]), "username": []byte("anvil-admin"),
		"password": []byte(strings.TrimSpace(string(pw))), "ca.crt": ca,
	}, nil
}

// DatabasePassword returns the MariaDB password of a database user the set
// created, such as "nova".
func (c *Cloud) DatabasePassword(user string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(c.Dir, "secrets", "db-"+user))
	if err != nil {
		return "", fmt.Errorf("reading the %s database user's password file: %w", user, err)
	}
	return strings.TrimSpace(string(raw)), nil
}

func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s (are the services started? hack/openstack/openstack.sh start): %w", path, err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}
