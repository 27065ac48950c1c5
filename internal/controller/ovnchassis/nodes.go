package ovnchassis

import (
	"crypto/sha256"
	"encoding/hex"
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
}

// Render is the entry as bash KEY=value lines. Values are quoted so the
// file can be sourced whatever they hold.
func (e NodeEntry) Render() string {
	lines := []string{
		"SYSTEM_ID=" + strconv.Quote(e.SystemID),
		"GATEWAY=" + strconv.FormatBool(e.Gateway),
		"BRIDGE_MAPPINGS=" + strconv.Quote(e.BridgeMappings),
		"ENCAP_TYPE=" + strconv.Quote(e.EncapType),
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

// ParseSystemID reads SYSTEM_ID back from a rendered entry.
func ParseSystemID(rendered string) string {
	for _, line := range strings.Split(rendered, "\n") {
		if v, ok := strings.CutPrefix(line, "SYSTEM_ID="); ok {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
			return v
		}
	}
	return ""
}

// NodeInput is a node the chassis's selector matched.
type NodeInput struct {
	Name   string
	Labels map[string]string
}

// DecideNodes renders one entry per selected node and one leaving entry per
// node that was rendered before and is no longer selected, in name order.
// A node keeps its system-id for life: the live ConfigMap's first, then the
// one in status, else mint makes one, because a new id would register a
// second chassis for the same host.
func DecideNodes(chassis *ovnv1alpha1.OVNChassis, selected []NodeInput, live map[string]string, mint func() string) []NodeEntry {
	known := map[string]string{}
	for _, n := range chassis.Status.Nodes {
		known[n.Name] = n.SystemID
	}
	for name, rendered := range live {
		if id := ParseSystemID(rendered); id != "" {
			known[name] = id
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
