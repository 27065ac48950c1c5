package ovncentral

import (
	"net"
	"strconv"
	"strings"
)

// MemberObservation is what the Endpoints step read about one member: the
// cluster IP of its Service ("" when the Service is missing or has none)
// and the host IP of its pod ("" when the pod is gone or not on a node).
type MemberObservation struct {
	ClusterIP string
	HostIP    string
}

// DatabaseObservation is what the Endpoints step read about one database.
type DatabaseObservation struct {
	// Short names the database in messages: nb or sb.
	Short string
	// Port is the client port behind each member's Service.
	Port int32
	// ExternallyReachable publishes node addresses too.
	ExternallyReachable bool
	// NodePortBase is member 0's node port.
	NodePortBase int32
	// Members are in ordinal order.
	Members []MemberObservation
}

// DatabaseAddresses are the addresses one database publishes.
type DatabaseAddresses struct {
	// Internal is ssl:<clusterIP>:<port> per member, in ordinal order.
	Internal string
	// External is ssl:<hostIP>:<nodePort> per member on a node, in ordinal
	// order; empty unless the database is externally reachable.
	External string
}

// DecideEndpoints computes both databases' addresses. They are published
// together or not at all: a consumer that got a partial list would connect
// to a cluster it cannot fully reach, and one that got the Northbound
// without the Southbound would half-configure. pending says why nothing is
// published, naming the first gap.
func DecideEndpoints(dbs []DatabaseObservation) (addrs []DatabaseAddresses, pending string) {
	addrs = make([]DatabaseAddresses, len(dbs))
	for i, db := range dbs {
		var internal, external []string
		for m, member := range db.Members {
			if member.ClusterIP == "" || member.ClusterIP == "None" {
				return nil, "the Service of " + db.Short + " member " + strconv.Itoa(m) + " has no cluster IP yet"
			}
			internal = append(internal, sslAddress(member.ClusterIP, db.Port))
			// A member whose pod is gone is left out; the others still
			// form the cluster and clients find the leader among them.
			if db.ExternallyReachable && member.HostIP != "" {
				external = append(external, sslAddress(member.HostIP, db.NodePortBase+int32(m)))
			}
		}
		if db.ExternallyReachable && len(external) == 0 {
			return nil, "no " + db.Short + " member runs on a node yet"
		}
		addrs[i] = DatabaseAddresses{Internal: strings.Join(internal, ","), External: strings.Join(external, ",")}
	}
	return addrs, ""
}

// sslAddress is an OVSDB ssl: address; IPv6 literals are bracketed, as
// OVS expects.
func sslAddress(ip string, port int32) string {
	return "ssl:" + net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

// DecideRelayNodeAddresses computes the relay's node addresses: one per
// node that runs a relay pod, deduplicated and sorted, so the value does
// not change when pods move between the same nodes.
func DecideRelayNodeAddresses(hostIPs []string, nodePort int32) string {
	seen := map[string]bool{}
	var ips []string
	for _, ip := range hostIPs {
		if ip != "" && !seen[ip] {
			seen[ip] = true
			ips = append(ips, ip)
		}
	}
	sortIPs(ips)
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, sslAddress(ip, nodePort))
	}
	return strings.Join(out, ",")
}

// sortIPs orders addresses numerically where they parse, textually
// otherwise, so 10.0.0.9 comes before 10.0.0.10.
func sortIPs(ips []string) {
	key := func(s string) string {
		if ip := net.ParseIP(s); ip != nil {
			return string(ip.To16())
		}
		return s
	}
	for i := 1; i < len(ips); i++ {
		for j := i; j > 0 && key(ips[j]) < key(ips[j-1]); j-- {
			ips[j], ips[j-1] = ips[j-1], ips[j]
		}
	}
}

// AddressesUsePort reports whether every address of a comma-joined list
// ends in port; an empty list does.
func AddressesUsePort(list string, port int32) bool {
	if list == "" {
		return true
	}
	for _, a := range strings.Split(list, ",") {
		if !strings.HasSuffix(a, ":"+strconv.Itoa(int(port))) {
			return false
		}
	}
	return true
}
