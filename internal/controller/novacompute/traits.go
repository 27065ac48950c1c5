package novacompute

import (
	"fmt"
	"maps"
	"slices"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// NodeTraits is the list of custom traits a node gets: the pool's traits
// and its hostTraits entry's, or only the entry's with mode Replace. The
// result is sorted and free of duplicates. It is pure.
func NodeTraits(pool *novav1alpha1.NovaCompute, node string) []string {
	set := map[string]bool{}
	replace := false
	for _, h := range pool.Spec.HostTraits {
		if h.NodeName != node {
			continue
		}
		replace = h.Mode == novav1alpha1.TraitsModeReplace
		addAll(set, h.Traits)
	}
	if !replace {
		addAll(set, pool.Spec.Traits)
	}
	return slices.Sorted(maps.Keys(set))
}

// AllTraits are every trait the pool names, sorted.
func AllTraits(pool *novav1alpha1.NovaCompute) []string {
	set := map[string]bool{}
	addAll(set, pool.Spec.Traits)
	for _, h := range pool.Spec.HostTraits {
		addAll(set, h.Traits)
	}
	return slices.Sorted(maps.Keys(set))
}

// InvalidTraitPaths lists the spec fields that name a trait which is not a
// custom trait, in spec order. Admission refuses them; the controller asks
// again, because a pool that bypassed admission would otherwise hand a
// standard trait (a CPU flag, say) to the hypervisor operator, which sets
// it on the node's resource provider and steers the scheduler.
func InvalidTraitPaths(pool *novav1alpha1.NovaCompute) []string {
	var out []string
	for i, t := range pool.Spec.Traits {
		if !novav1alpha1.IsCustomTrait(t) {
			out = append(out, fmt.Sprintf("spec.traits[%d]", i))
		}
	}
	for i, h := range pool.Spec.HostTraits {
		for j, t := range h.Traits {
			if !novav1alpha1.IsCustomTrait(t) {
				out = append(out, fmt.Sprintf("spec.hostTraits[%d].traits[%d]", i, j))
			}
		}
	}
	return out
}

func addAll(set map[string]bool, items []string) {
	for _, t := range items {
		set[t] = true
	}
}

// containsAll tells whether have holds every element of want.
func containsAll(have, want []string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}
