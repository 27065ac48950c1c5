// Package perf measures Anvil on real apiservers and prints what it found
// as ratios against baselines measured in the same run, so that a number
// means the same on a laptop and on a loaded CI machine. `make bench` runs
// it through internal/dev/cmd/anvil-bench; docs/reference/performance.md
// records a run and explains each row.
//
// The measurements are not tests: nothing here fails on a slow machine. A
// measurement fails only when the system does not converge at all, and a
// missed target is printed as such.
package perf
