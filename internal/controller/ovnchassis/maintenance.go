package ovnchassis

import (
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// Kinds of maintenance Job.
const (
	// ApplyJob writes a changed entry into a running node's OVS database.
	ApplyJob = "apply"
	// EvacuateJob moves gateway duties off a node that lost its role.
	EvacuateJob = "evacuate"
	// ChassisDelJob removes a departed node's chassis from the Southbound.
	ChassisDelJob = "chassis-del"
	// IdentityJob installs a node's issued identity on the node.
	IdentityJob = "identity"
)

// NodeAction is one maintenance Job a node needs.
type NodeAction struct {
	Kind  string
	Entry NodeEntry
}

// DecideMaintenance returns, in node name order, the one Job each node
// needs next, comparing the entries rendered now with what status recorded
// the node applied. A node whose issued identity it has not installed
// needs that first, a node first seen included: its ovn-controller waits
// for the files. Otherwise a node first seen needs none: its
// ovn-controller pod applies its entry when it starts. A node moves
// through apply, then evacuate, one Job per pass; a leaving node needs
// only its deletion.
func DecideMaintenance(entries []NodeEntry, recorded []ovnv1alpha1.ChassisNodeStatus) []NodeAction {
	prev := map[string]ovnv1alpha1.ChassisNodeStatus{}
	for _, n := range recorded {
		prev[n.Name] = n
	}
	var actions []NodeAction
	for _, e := range entries {
		p, seen := prev[e.Name]
		switch {
		case e.Leaving:
			actions = append(actions, NodeAction{Kind: ChassisDelJob, Entry: e})
		case e.IdentityHash != "" && p.IdentityHash != e.IdentityHash:
			actions = append(actions, NodeAction{Kind: IdentityJob, Entry: e})
		case seen && p.ConfigHash != "" && p.ConfigHash != e.Hash():
			actions = append(actions, NodeAction{Kind: ApplyJob, Entry: e})
		case seen && p.Gateway && !e.Gateway && !p.GatewayEvacuated:
			actions = append(actions, NodeAction{Kind: EvacuateJob, Entry: e})
		}
	}
	return actions
}

// RecordNodes returns the status entries after this pass: new nodes are
// recorded as applied, nodes without a pending action keep what they had,
// and finished Jobs (done, by node name) move their node on. A node whose
// deletion finished is dropped.
func RecordNodes(entries []NodeEntry, recorded []ovnv1alpha1.ChassisNodeStatus, done map[string]string) []ovnv1alpha1.ChassisNodeStatus {
	prev := map[string]ovnv1alpha1.ChassisNodeStatus{}
	for _, n := range recorded {
		prev[n.Name] = n
	}
	out := make([]ovnv1alpha1.ChassisNodeStatus, 0, len(entries))
	for _, e := range entries {
		p, seen := prev[e.Name]
		if !seen || p.ConfigHash == "" {
			p = ovnv1alpha1.ChassisNodeStatus{Name: e.Name, SystemID: e.SystemID, Gateway: e.Gateway, ConfigHash: e.Hash()}
		}
		p.SystemID, p.Leaving = e.SystemID, e.Leaving
		switch done[e.Name] {
		case ChassisDelJob:
			continue
		case IdentityJob:
			p.IdentityHash = e.IdentityHash
		case ApplyJob:
			p.ConfigHash = e.Hash()
			// A gateway that lost its role stays recorded as one until its
			// evacuation lands; a re-promoted one needs evacuating again
			// next time.
			if e.Gateway {
				p.Gateway, p.GatewayEvacuated = true, false
			}
		case EvacuateJob:
			p.Gateway, p.GatewayEvacuated = false, true
		}
		out = append(out, p)
	}
	return out
}
