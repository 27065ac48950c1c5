package testenv

import (
	"os"
	"testing"
)

// SkipLongSuitesEnv is the variable `make test` sets: the tests that cost
// minutes of two cores each (the chaos suite, the generated round trips,
// the benchmarks' test forms, the dev tree's own service tests) then skip,
// and `make test-all` runs them. Each has a short version that stays in
// `make test`; docs/design/foundation.md lists the pairs.
const SkipLongSuitesEnv = "ANVIL_SKIP_LONG_SUITES"

// SkipsLongSuites reports whether this run leaves the long suites out.
func SkipsLongSuites() bool {
	return os.Getenv(SkipLongSuitesEnv) != ""
}

// Long skips t in a run that leaves the long suites out, naming the
// target that runs it. A plain `go test` runs it.
func Long(t testing.TB, target string) {
	t.Helper()
	if SkipsLongSuites() {
		t.Skipf("long suite: `make %s` runs it (%s is set)", target, SkipLongSuitesEnv)
	}
}
