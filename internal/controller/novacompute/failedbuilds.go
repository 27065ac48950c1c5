package novacompute

import (
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// FailedBuildsRise is a node whose failed_builds counter reached the
// pool's warning threshold in this pass.
type FailedBuildsRise struct {
	// Node is the node, which is its Nova host.
	Node string
	// Count is the counter as read.
	Count int32
}

// ApplyFailedBuilds writes the counters read from the cell database into
// the pool's node entries and returns the nodes that rose to threshold or
// above, in entry order. A node without a compute_nodes row keeps what it
// had, since nova-compute writes the row only after it registered. A
// Conflict node is another pool's host and is left out. threshold nil
// means the pool records no event, so nothing rises.
//
// The previous value is the one in status, so an operator restart does not
// warn again about a counter it already reported, and a node first read
// above the threshold warns once: its rise happened while nobody looked.
func ApplyFailedBuilds(nodes []novav1alpha1.NovaComputeNode, counts map[string]int32, threshold *int32) []FailedBuildsRise {
	var rises []FailedBuildsRise
	for i := range nodes {
		n := &nodes[i]
		if n.Phase == novav1alpha1.NodeConflict {
			continue
		}
		count, ok := counts[n.Name]
		if !ok {
			continue
		}
		if threshold != nil && count >= *threshold && (n.FailedBuilds == nil || *n.FailedBuilds < *threshold) {
			rises = append(rises, FailedBuildsRise{Node: n.Name, Count: count})
		}
		n.FailedBuilds = &count
	}
	return rises
}

// failedBuildsSeries returns the nodes whose counter the failed-builds
// gauge shows for entries: every non-Conflict node that was read.
func failedBuildsSeries(entries []novav1alpha1.NovaComputeNode) map[string]int32 {
	out := map[string]int32{}
	for _, n := range entries {
		if n.Phase != novav1alpha1.NodeConflict && n.FailedBuilds != nil {
			out[n.Name] = *n.FailedBuilds
		}
	}
	return out
}
