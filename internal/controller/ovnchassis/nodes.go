package ovnchassis

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// NodeEntry is what one node's chassis is configured with; the apply-node
// step reads it from the nodes ConfigMap.
type NodeEntry struct {
	Name           string
	SystemID       string
	Gateway        bool
	BridgeMappings string
	EncapType      string
	// Leaving marks a node that is no longer selected; its chassis is
	// deleted from the Southbound, then the entry goes.
	Leaving bool
	// IdentityHash is IdentityHash of the node's issued identity, empty
	// while cert-manager has not issued it. It is not rendered: the node
	// reads its identity from files its identity Job installs.
	IdentityHash string
}

// Render is the entry as bash KEY=value lines, which apply-node.sh
// sources. Values are in single quotes, inside which bash expands
// nothing: in double quotes, a value holding $(...) would run as a command
// on the node.
func (e NodeEntry) Render() string {
	lines := []string{
		"SYSTEM_ID=" + shellQuote(e.SystemID),
		"GATEWAY=" + strconv.FormatBool(e.Gateway),
		"BRIDGE_MAPPINGS=" + shellQuote(e.BridgeMappings),
		"ENCAP_TYPE=" + shellQuote(e.EncapType),
	}
	if e.Leaving {
		lines = append(lines, "LEAVING=true")
	}
	return strings.Join(lines, "\n") + "\n"
}

// Hash is the first 8 hex digits of the SHA-256 of the rendered entry.
func (e NodeEntry) Hash() string {
	sum := sha256.Sum256([]byte(e.Render()))
	return hex.EncodeToString(sum[:])[:8]
}

// shellQuote puts s in single quotes for bash; a single quote inside ends
// the quoting, adds an escaped quote and starts it again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// systemIDPattern is the form of the ids newSystemID mints: a lower-case
// UUID.
var systemIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// IsSystemID tells whether s has the form of an id Anvil mints. Only such
// an id is ever rendered, and so handed to chassis-del in the shared
// Southbound.
func IsSystemID(s string) bool { return systemIDPattern.MatchString(s) }

// ParseSystemID reads SYSTEM_ID back from a rendered entry, in single
// quotes or in the double quotes that earlier versions wrote. It returns
// "" for anything but an id of the form Anvil mints: the ConfigMap lives on
// the compute cluster, where others may write it.
func ParseSystemID(rendered string) string {
	for _, line := range strings.Split(rendered, "\n") {
		v, ok := strings.CutPrefix(line, "SYSTEM_ID=")
		if !ok {
			continue
		}
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		} else if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		if IsSystemID(v) {
			return v
		}
		return ""
	}
	return ""
}

// NodeInput is a node the chassis's selector matched.
type NodeInput struct {
	Name   string
	Labels map[string]string
}

// DecideNodes renders one entry per selected node and one leaving entry per
// node that status records and that is no longer selected, in name order.
// A node keeps its system-id for life, because a new id would register a
// second chassis for the same host: the one status records first, then,
// for a selected node that status does not record yet (a pass that wrote
// the ConfigMap and stopped before its status), the live ConfigMap's,
// else mint makes one. The live ConfigMap never names a leaving node nor
// overrides status: it is on the compute cluster, and a leaving entry
// deletes its chassis from the Southbound that every cluster shares.
func DecideNodes(chassis *ovnv1alpha1.OVNChassis, selected []NodeInput, live map[string]string, mint func() string) []NodeEntry {
	known := map[string]string{}
	for _, n := range chassis.Status.Nodes {
		if IsSystemID(n.SystemID) {
			known[n.Name] = n.SystemID
		}
	}
	for _, n := range selected {
		if _, ok := known[n.Name]; !ok {
			if id := ParseSystemID(live[n.Name]); id != "" {
				known[n.Name] = id
			}
		}
	}
	var gateway labels.Selector
	if g := chassis.Spec.Gateway; g != nil {
		gateway = labels.SelectorFromSet(g.NodeSelector)
	}
	mappings := make([]string, 0, len(chassis.Spec.BridgeMappings))
	for _, m := range chassis.Spec.BridgeMappings {
		mappings = append(mappings, m.PhysicalNetwork+":"+m.Bridge)
	}
	entries := map[string]NodeEntry{}
	for _, n := range selected {
		id := known[n.Name]
		if id == "" {
			id = mint()
		}
		entries[n.Name] = NodeEntry{
			Name: n.Name, SystemID: id,
			Gateway:        gateway != nil && gateway.Matches(labels.Set(n.Labels)),
			BridgeMappings: strings.Join(mappings, ","),
			EncapType:      chassis.Spec.ResolvedEncapType(),
		}
	}
	for name, id := range known {
		if _, ok := entries[name]; !ok && id != "" {
			entries[name] = NodeEntry{Name: name, SystemID: id, EncapType: chassis.Spec.ResolvedEncapType(), Leaving: true}
		}
	}
	out := make([]NodeEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
