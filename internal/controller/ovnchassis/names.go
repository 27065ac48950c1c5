package ovnchassis

import (
	"crypto/sha256"
	"encoding/hex"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// Labels of the chassis's children.
const (
	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = "app.kubernetes.io/component"
	managedByLabel = "app.kubernetes.io/managed-by"
	nameValue      = "ovnchassis"
	managedByValue = "ovnchassis-operator"
	// ClientSecretComponent labels the copy of the central's client
	// identity on the chassis's cluster.
	ClientSecretComponent = "ovn-client"
	// nodeAnnotation on a maintenance Job names the node it works on, and
	// configHashAnnotation the entry an apply Job applies.
	nodeAnnotation       = "ovn.openstack.c5c3.io/node"
	configHashAnnotation = "ovn.openstack.c5c3.io/config-hash"
	// ScriptsHashAnnotation on a pod template rolls the pods when a
	// script changes.
	ScriptsHashAnnotation = "ovn.openstack.c5c3.io/scripts-hash"
)

// Conventional node labels; the guide's chassis selects on the first.
const (
	// ChassisNodeLabel marks a node that runs a chassis.
	ChassisNodeLabel = "openstack.c5c3.io/chassis"
	// GatewayNodeLabel marks a node that is also a gateway.
	GatewayNodeLabel = "openstack.c5c3.io/gateway"
)

// ClientSecretName is the copy of the central's client identity a chassis
// on another cluster mounts: {chassis}-ovn-client.
func ClientSecretName(c *ovnv1alpha1.OVNChassis) string { return c.Name + "-ovn-client" }

// OVSName is the Open vSwitch DaemonSet.
func OVSName(c *ovnv1alpha1.OVNChassis) string { return c.Name + "-ovs" }

// ControllerName is the ovn-controller DaemonSet.
func ControllerName(c *ovnv1alpha1.OVNChassis) string { return c.Name + "-ovn-controller" }

// NodesName is the ConfigMap of per-node entries.
func NodesName(c *ovnv1alpha1.OVNChassis) string { return c.Name + "-nodes" }

// ScriptsName is the ConfigMap of the pods' and Jobs' scripts.
func ScriptsName(c *ovnv1alpha1.OVNChassis) string { return c.Name + "-chassis-scripts" }

// JobName is a maintenance Job's name: {chassis}-{kind}-{first 8 hex of
// sha256(node)}; the hash keeps long node names within the name limit.
func JobName(c *ovnv1alpha1.OVNChassis, kind, node string) string {
	return c.Name + "-" + kind + "-" + NodeHash(node)
}

// NodeHash is the first 8 hex digits of sha256(node).
func NodeHash(node string) string {
	sum := sha256.Sum256([]byte(node))
	return hex.EncodeToString(sum[:])[:8]
}

// childLabels are every child's labels.
func childLabels(c *ovnv1alpha1.OVNChassis, component string) map[string]string {
	return map[string]string{
		nameLabel: nameValue, instanceLabel: c.Name, componentLabel: component, managedByLabel: managedByValue,
	}
}

// selector selects one component's pods.
func selector(c *ovnv1alpha1.OVNChassis, component string) map[string]string {
	return map[string]string{nameLabel: nameValue, instanceLabel: c.Name, componentLabel: component}
}
