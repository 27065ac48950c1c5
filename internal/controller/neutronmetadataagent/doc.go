// Package neutronmetadataagent reconciles NeutronMetadataAgent objects:
// Neutron's OVN metadata agent on the nodes of one OVNChassis, which
// answers the instances' requests to 169.254.169.254 by forwarding them,
// signed with the metadata shared secret, to Nova's metadata API. A pass
//   - resolves the agent's cluster and holds a placed agent with the
//     remote-children finalizer;
//   - resolves the chassis and its central: the nodes, the Southbound
//     address and the client identity (DecideChassis);
//   - checks that the Secrets the agent references exist on its cluster,
//     so no pod ever waits for one;
//   - renders the configuration into an immutable ConfigMap;
//   - runs the agent's DaemonSet.
//
// docs/design/neutron-metadata-agent.md is the plan, and
// docs/reference/neutronmetadataagent.md the contract.
package neutronmetadataagent

import "time"

// Requeue intervals.
const (
	// chassisPoll polls a chassis or central that is missing or has not
	// published what the agent needs, and a cluster that does not resolve.
	chassisPoll = 15 * time.Second
	// secretPoll polls a referenced Secret or key that does not exist yet.
	secretPoll = 15 * time.Second
	// daemonSetPoll polls a rolling DaemonSet.
	daemonSetPoll = 10 * time.Second
)
