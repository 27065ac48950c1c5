package v1alpha1

import "regexp"

// MaxTraitLength is the longest trait name Placement accepts.
const MaxTraitLength = 255

// customTraitName is Placement's rule for the traits an operator may
// define; every other trait is Nova's or os-traits' own.
var customTraitName = regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)

// IsCustomTrait tells whether t is a trait a pool may hand out: a custom
// trait Placement would accept. The admission webhook and the pool
// controller both apply it, so a standard trait such as a CPU flag can
// never reach a Hypervisor, even past admission.
func IsCustomTrait(t string) bool {
	return len(t) <= MaxTraitLength && customTraitName.MatchString(t)
}
