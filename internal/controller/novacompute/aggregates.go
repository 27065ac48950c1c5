package novacompute

import (
	"sort"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// heldForZones tells whether a node's zone needs an aggregate: only nodes
// the pool runs, not those leaving or refused.
func heldForZones(phase string) bool {
	return phase == novav1alpha1.NodePending || phase == novav1alpha1.NodeActive
}

// PoolZones are the distinct zones of a pool's Pending and Active nodes,
// sorted, and the names of such nodes without a zone.
func PoolZones(nodes []novav1alpha1.NovaComputeNode) (zones, zoneless []string) {
	seen := map[string]bool{}
	for _, n := range nodes {
		if !heldForZones(n.Phase) {
			continue
		}
		if n.Zone == "" {
			zoneless = append(zoneless, n.Name)
			continue
		}
		if !seen[n.Zone] {
			seen[n.Zone] = true
			zones = append(zones, n.Zone)
		}
	}
	sort.Strings(zones)
	sort.Strings(zoneless)
	return zones, zoneless
}

// RequiredAggregates is the set every pool of a Nova needs together: the
// zones of the nodes of every live pool, on any cluster, plus
// tenant_filter_tests while any pool is live. self replaces the pool's own
// stored entries with those of this pass. It is pure.
func RequiredAggregates(pools []novav1alpha1.NovaCompute, self *novav1alpha1.NovaCompute, selfNodes []novav1alpha1.NovaComputeNode, selfDeleting bool) map[string]bool {
	req := map[string]bool{}
	live := false
	for i := range pools {
		p := &pools[i]
		nodes := p.Status.Nodes
		deleting := !p.DeletionTimestamp.IsZero()
		if p.UID == self.UID {
			nodes, deleting = selfNodes, selfDeleting
		}
		if deleting {
			continue
		}
		live = true
		zones, _ := PoolZones(nodes)
		for _, z := range zones {
			req[z] = true
		}
	}
	if live {
		req[novav1alpha1.TenantFilterTestsAggregate] = true
	}
	return req
}

// ReapDecision says what to do with an aggregate the pools no longer need.
type ReapDecision int

// Reap decisions.
const (
	// KeepAggregate: it is needed, foreign, or still has hosts.
	KeepAggregate ReapDecision = iota
	// DeleteAggregate: ours, unneeded and empty.
	DeleteAggregate
	// KeepForeignMetadata: ours and unneeded, but someone added metadata.
	KeepForeignMetadata
)

// DecideReap decides the fate of one aggregate. Only an aggregate carrying
// this Nova's marker is ever deleted, and only while it has no host and no
// metadata beyond the marker and its availability zone. It is pure.
func DecideReap(agg openstack.Aggregate, marker string, required map[string]bool) (ReapDecision, []string) {
	if required[agg.Name] || agg.Metadata[novav1alpha1.AggregateMarkerKey] != marker || len(agg.Hosts) > 0 {
		return KeepAggregate, nil
	}
	var foreign []string
	for k := range agg.Metadata {
		if k != novav1alpha1.AggregateMarkerKey && k != "availability_zone" {
			foreign = append(foreign, k)
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return KeepForeignMetadata, foreign
	}
	return DeleteAggregate, nil
}
