package ovncentral

import (
	"fmt"
	"strconv"
	"strings"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// Labels every child carries; a database's pods are selected by instance
// and component.
const (
	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = "app.kubernetes.io/component"
	managedByLabel = "app.kubernetes.io/managed-by"
	nameValue      = "ovncentral"
	managedByValue = "anvil"
	// podNameLabel is the label the StatefulSet controller puts on each
	// member; a member's own Service selects it, so the Service follows
	// the member and nothing else.
	podNameLabel = "statefulset.kubernetes.io/pod-name"
	// ScriptsHashAnnotation on a pod template carries the hash of the
	// scripts ConfigMap, so a changed script rolls the pods.
	ScriptsHashAnnotation = "ovn.openstack.c5c3.io/scripts-hash"
)

// Ports of the databases; the spec and every OVN client agree on them.
const (
	nbPort     int32 = 6641
	sbPort     int32 = 6642
	nbRaftPort int32 = 6643
	sbRaftPort int32 = 6644
	relayPort  int32 = 6642
	// sbInternalPort is the Southbound's listener without an RBAC role,
	// for northd and the relay; the port the charms of the same design
	// use. It is in no Service that leaves the central's cluster.
	sbInternalPort int32 = 16642
	clusterLocal         = "svc.cluster.local"
)

// Database is one of the central's two clustered databases.
type Database struct {
	// Short is nb or sb, the suffix of the database's children.
	Short string
	// Schema is the OVSDB database name.
	Schema string
	// Port is the client port, RaftPort the port members talk Raft on.
	Port, RaftPort int32
	// InternalPort, when set, is a client listener without the RBAC role
	// Port carries, for the central's own pods (docs/design/ovn.md,
	// "Each chassis writes only its own rows").
	InternalPort int32
}

// Northbound and Southbound are the central's databases.
var (
	Northbound = Database{Short: "nb", Schema: "OVN_Northbound", Port: nbPort, RaftPort: nbRaftPort}
	Southbound = Database{Short: "sb", Schema: "OVN_Southbound", Port: sbPort, RaftPort: sbRaftPort, InternalPort: sbInternalPort}
)

// databases lists both, in the order they are brought up.
var databases = []Database{Northbound, Southbound}

// Spec returns the database's block of the central's spec.
func (d Database) Spec(c *ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNDatabaseSpec {
	if d.Short == Northbound.Short {
		return &c.Spec.Northbound
	}
	return &c.Spec.Southbound
}

// Status returns the database's block of the central's status.
func (d Database) Status(c *ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNDatabaseStatus {
	if d.Short == Northbound.Short {
		return &c.Status.Northbound
	}
	return &c.Status.Southbound
}

// NodePortBase is the node port of the database's member 0.
func (d Database) NodePortBase(c *ovnv1alpha1.OVNCentral) int32 {
	if d.Short == Northbound.Short {
		return c.Spec.NorthboundNodePortBase()
	}
	return c.Spec.SouthboundNodePortBase()
}

// Condition is the condition the database's step owns.
func (d Database) Condition() string {
	if d.Short == Northbound.Short {
		return ovnv1alpha1.NorthboundReadyCondition
	}
	return ovnv1alpha1.SouthboundReadyCondition
}

// Name is the database's StatefulSet, headless Service and PDB:
// {central}-nb or {central}-sb.
func (d Database) Name(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-" + d.Short }

// MemberName is member i's pod and Service: {central}-<db>-<i>.
func (d Database) MemberName(c *ovnv1alpha1.OVNCentral, i int32) string {
	return d.Name(c) + "-" + strconv.Itoa(int(i))
}

// MemberHost is member i's DNS name under the headless Service, the name
// the other members and northd dial.
func (d Database) MemberHost(c *ovnv1alpha1.OVNCentral, i int32) string {
	return fmt.Sprintf("%s.%s.%s.%s", d.MemberName(c, i), d.Name(c), c.Namespace, clusterLocal)
}

// MemberAddresses is the comma-joined ssl: address of every member's
// client port, by DNS name, in ordinal order: what the backup dials.
func (d Database) MemberAddresses(c *ovnv1alpha1.OVNCentral) string {
	return d.memberAddresses(c, d.Port)
}

// InternalMemberAddresses is MemberAddresses at the listener without a
// role where the database has one: what northd and the relay dial, since
// they write rows no chassis may.
func (d Database) InternalMemberAddresses(c *ovnv1alpha1.OVNCentral) string {
	if d.InternalPort == 0 {
		return d.MemberAddresses(c)
	}
	return d.memberAddresses(c, d.InternalPort)
}

// memberAddresses lists every member at port.
func (d Database) memberAddresses(c *ovnv1alpha1.OVNCentral, port int32) string {
	n := d.Spec(c).ResolvedReplicas()
	addrs := make([]string, 0, n)
	for i := range n {
		addrs = append(addrs, "ssl:"+d.MemberHost(c, i)+":"+strconv.Itoa(int(port)))
	}
	return strings.Join(addrs, ",")
}

// ServerSecretName is the database's server certificate and Secret.
func (d Database) ServerSecretName(c *ovnv1alpha1.OVNCentral) string {
	return d.Name(c) + "-server"
}

// ClientSecretName is the central's client certificate and Secret, the
// identity northd, the backup and every consumer present.
func ClientSecretName(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-client" }

// RelayName is the relay's Deployment, Service and certificate.
func RelayName(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-sb-relay" }

// NorthdName is northd's Deployment.
func NorthdName(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-northd" }

// BackupName is the backup CronJob and its claim.
func BackupName(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-backup" }

// ScriptsName is the ConfigMap of the pods' scripts.
func ScriptsName(c *ovnv1alpha1.OVNCentral) string { return c.Name + "-central-scripts" }

// labels are the labels of every child of one component.
func labels(c *ovnv1alpha1.OVNCentral, component string) map[string]string {
	return map[string]string{
		nameLabel:      nameValue,
		instanceLabel:  c.Name,
		componentLabel: component,
		managedByLabel: managedByValue,
	}
}

// selector selects one component's pods; managed-by stays out so that a
// change of the label never orphans running pods.
func selector(c *ovnv1alpha1.OVNCentral, component string) map[string]string {
	return map[string]string{nameLabel: nameValue, instanceLabel: c.Name, componentLabel: component}
}
