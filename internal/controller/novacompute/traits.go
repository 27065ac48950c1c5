package novacompute

import (
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
