package perf_test

import (
	"bytes"
	"testing"

	"github.com/anvil/anvil/internal/dev/perf"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// P4 in miniature, so that the simulator path runs with the integration
// tests: three clusters of 20 kwok nodes, one pool on each, the operator
// as a process. It proves convergence and that every number was read;
// the times themselves are the bench's business, never a test's.
func TestIntegrationScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts four clusters and compiles the operator (run without -short)")
	}
	// The benchmark's test form is a long suite; make test keeps the
	// simulator's own tests (package osim).
	testenv.Long(t, "test-all")
	var logs, progress bytes.Buffer
	r, err := perf.MeasureScale(t.Context(), perf.Scale{Clusters: 3, NodesPerCluster: 20, PoolsPerCluster: 1}, &logs, &progress)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s\noperator log (tail):\n%s", err, progress.String(), tail(logs.Bytes(), 4000))
	}
	t.Logf("%s", progress.String())
	switch {
	case r.PeakRSS <= 0 || r.PeakRSS < r.IdleRSS:
		t.Errorf("peak RSS %d, idle %d: not read", r.PeakRSS, r.IdleRSS)
	case r.Pools.Count() == 0:
		t.Error("the pool controller's reconcile histogram moved by nothing")
	case r.Requests == 0:
		t.Error("the simulator served no request")
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
