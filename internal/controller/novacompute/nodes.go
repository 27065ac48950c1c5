package novacompute

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// NodeView is what the Nodes step knows of one Node.
type NodeView struct {
	// Name of the Node.
	Name string
	// Labels of the Node, for every pool's selector.
	Labels map[string]string
}

// Rival is another pool of the same Nova, as far as node ownership goes.
// A rival on another cluster has no Selector: only the names it holds
// count, since a node name is a Nova host name across the whole cloud.
type Rival struct {
	// Name of the pool.
	Name string
	// Created orders pools: the older one wins a node.
	Created time.Time
	// Deleting pools hold their nodes until drained but take no new ones.
	Deleting bool
	// Selector is the rival's nodeSelector.
	Selector map[string]string
	// Held maps the nodes the rival holds to their phase; Conflict entries
	// are not held.
	Held map[string]string
}

// NodeInput is everything the phase rules read.
type NodeInput struct {
	// Pool is this pool's name, Created its creation time.
	Pool    string
	Created time.Time
	// Deleting is set once the pool is being deleted: it selects nothing.
	Deleting bool
	// Selected are the Nodes this pool's selector matches; empty while
	// deleting.
	Selected []NodeView
	// Known are the labels of every other Node still present that the pool
	// holds; a held node missing here is gone.
	Known map[string]map[string]string
	// Current are the entries of the pool's status.
	Current []novav1alpha1.NovaComputeNode
	// Rivals are the other pools of the Nova on the same cluster.
	Rivals []Rival
}

// NodeDecision is the outcome of the phase rules.
type NodeDecision struct {
	// Nodes are the new entries, sorted by name.
	Nodes []novav1alpha1.NovaComputeNode
	// NewConflicts are nodes that became Conflict in this pass.
	NewConflicts []string
	// Handover are Releasing nodes another live pool selects: their
	// service stays, and their entry drops without a call to Nova.
	Handover map[string]bool
	// Selected and Leaving count the selected and the departing nodes.
	Selected, Leaving int
}

// DecideNodes applies the phase rules of a pass. It is pure, so every rule
// is table-tested:
//
//  1. A selected node this pool holds stays; a Draining or Releasing one
//     comes back as Active (Pending without a service), its service left
//     disabled, unless an older live pool also holds it Pending or Active.
//     A selected node another pool holds, or one an older pool selects,
//     is a Conflict. Any other selected node is taken as Pending.
//  2. A held node that is no longer selected, is gone, or belongs to a
//     deleting pool is Releasing when another live pool selects it (a
//     handover), else Draining; a Releasing entry stays Releasing.
//  3. A Conflict entry that is no longer selected is dropped.
func DecideNodes(in NodeInput) NodeDecision {
	current := map[string]novav1alpha1.NovaComputeNode{}
	for _, n := range in.Current {
		current[n.Name] = n
	}
	out := NodeDecision{Handover: map[string]bool{}}
	selected := map[string]bool{}
	allLabels := map[string]map[string]string{}
	for name, l := range in.Known {
		allLabels[name] = l
	}
	for _, v := range in.Selected {
		allLabels[v.Name] = v.Labels
	}

	if !in.Deleting {
		for _, v := range in.Selected {
			selected[v.Name] = true
			cur, held := current[v.Name]
			held = held && cur.Phase != novav1alpha1.NodeConflict
			entry := cur
			entry.Name, entry.Zone = v.Name, v.Labels[corev1.LabelTopologyZone]
			if rival := in.conflictFor(v, held, allLabels); rival != "" {
				if cur.Phase != novav1alpha1.NodeConflict {
					out.NewConflicts = append(out.NewConflicts, v.Name)
				}
				out.Nodes = append(out.Nodes, novav1alpha1.NovaComputeNode{
					Name: v.Name, Phase: novav1alpha1.NodeConflict, Zone: entry.Zone, ConflictsWith: rival,
				})
				continue
			}
			switch {
			case !held:
				entry = novav1alpha1.NovaComputeNode{Name: v.Name, Phase: novav1alpha1.NodePending, Zone: entry.Zone}
			case cur.Phase == novav1alpha1.NodeDraining || cur.Phase == novav1alpha1.NodeReleasing:
				// The node is back; its service stays disabled, because
				// the pool never enables one.
				entry.Phase = novav1alpha1.NodeActive
				if entry.ServiceID == "" {
					entry.Phase = novav1alpha1.NodePending
				}
				entry.Instances = nil
			}
			entry.ConflictsWith = ""
			out.Nodes = append(out.Nodes, entry)
		}
	}
	out.Selected = len(selected)

	for _, cur := range in.Current {
		if selected[cur.Name] {
			continue
		}
		if cur.Phase == novav1alpha1.NodeConflict {
			continue // rule 3
		}
		entry := cur
		entry.ConflictsWith = ""
		out.Leaving++
		labelsOf, present := allLabels[cur.Name]
		if present && in.liveRivalSelects(labelsOf) {
			entry.Phase = novav1alpha1.NodeReleasing
			out.Handover[cur.Name] = true
		} else if entry.Phase != novav1alpha1.NodeReleasing {
			entry.Phase = novav1alpha1.NodeDraining
		}
		out.Nodes = append(out.Nodes, entry)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Name < out.Nodes[j].Name })
	sort.Strings(out.NewConflicts)
	return out
}

// conflictFor returns the rival that keeps this pool off a selected node,
// or "".
func (in NodeInput) conflictFor(v NodeView, held bool, allLabels map[string]map[string]string) string {
	rivals := append([]Rival(nil), in.Rivals...)
	sort.Slice(rivals, func(i, j int) bool { return rivals[i].older(rivals[j]) })
	for _, r := range rivals {
		phase, rivalHolds := r.Held[v.Name]
		if held {
			// Both hold it: residue of a race. The older live pool keeps
			// it if it runs it.
			if rivalHolds && !r.Deleting && r.olderThan(in.Pool, in.Created) &&
				(phase == novav1alpha1.NodePending || phase == novav1alpha1.NodeActive) {
				return r.Name
			}
			continue
		}
		if rivalHolds {
			return r.Name
		}
	}
	if held {
		return ""
	}
	for _, r := range rivals {
		if !r.Deleting && r.olderThan(in.Pool, in.Created) && selects(r.Selector, allLabels[v.Name]) {
			return r.Name
		}
	}
	return ""
}

// liveRivalSelects tells whether a pool that is not being deleted selects
// a node with these labels.
func (in NodeInput) liveRivalSelects(nodeLabels map[string]string) bool {
	for _, r := range in.Rivals {
		if !r.Deleting && selects(r.Selector, nodeLabels) {
			return true
		}
	}
	return false
}

// older orders rivals by creation time, then name.
func (r Rival) older(o Rival) bool { return r.olderThan(o.Name, o.Created) }

// olderThan tells whether r was created before the named pool.
func (r Rival) olderThan(name string, created time.Time) bool {
	if !r.Created.Equal(created) {
		return r.Created.Before(created)
	}
	return r.Name < name
}

// selects tells whether a non-empty selector matches the labels.
func selects(selector, nodeLabels map[string]string) bool {
	if len(selector) == 0 || nodeLabels == nil {
		return false
	}
	return labels.SelectorFromSet(selector).Matches(labels.Set(nodeLabels))
}
