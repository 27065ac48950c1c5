package openstacktest

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
)

// NetworkClient is a raw client of the set's Neutron (the catalog's
// network service, internal interface) as the cloud admin, for what only
// tests do, such as creating networks and binding ports.
func (c *Cloud) NetworkClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	a := c.admin
	provider, err := gcopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password, DomainName: a.UserDomainName,
		Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.ProjectDomainName},
	})
	if err != nil {
		// gophercloud's message may quote the request.
		return nil, errors.New("authenticating the test network client failed")
	}
	return gcopenstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: a.Region, Availability: gophercloud.AvailabilityInternal})
}

// NetworkAgent is what tests read of a Neutron agent.
type NetworkAgent struct {
	ID        string `json:"id"`
	AgentType string `json:"agent_type"`
	Host      string `json:"host"`
	Alive     bool   `json:"alive"`
}

// NetworkAgents lists Neutron's agents on host, or all with host "".
// gophercloud's agents package cannot read them: it fails on the
// timestamps ML2/OVN reports ("2006-01-02 15:04:05.000000+00:00").
func NetworkAgents(ctx context.Context, nc *gophercloud.ServiceClient, host string) ([]NetworkAgent, error) {
	u := nc.ServiceURL("agents")
	if host != "" {
		u += "?" + url.Values{"host": {host}}.Encode()
	}
	var body struct {
		Agents []NetworkAgent `json:"agents"`
	}
	resp, err := nc.Get(ctx, u, &body, nil)
	if resp != nil {
		// gophercloud has read and closed it when it parsed the JSON.
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the network agents: HTTP error %v", statusOnly(err))
	}
	return body.Agents, nil
}
