package novacompute

import (
	"sort"

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
		for _, t := range h.Traits {
			set[t] = true
		}
	}
	if !replace {
		for _, t := range pool.Spec.Traits {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// AllTraits are every trait the pool names, sorted.
func AllTraits(pool *novav1alpha1.NovaCompute) []string {
	set := map[string]bool{}
	for _, t := range pool.Spec.Traits {
		set[t] = true
	}
	for _, h := range pool.Spec.HostTraits {
		for _, t := range h.Traits {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
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
