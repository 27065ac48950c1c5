// Package novaconfig renders the compute contract: the Secret data a Nova
// publishes so that a nova-compute, on this cluster or another one, can join
// it. The package is pure: it turns inputs the controller has already read
// into bytes, and it never talks to a cluster.
//
// The contract is versioned by its reference page,
// docs/reference/nova-compute-contract.md; the golden files under testdata
// pin the exact bytes, and an integration test checks them against the
// oslo-config-validator of a real Nova.
package novaconfig
