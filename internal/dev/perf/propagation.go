package perf

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

const (
	// convergeTimeout bounds a wait for something that must happen; it is a
	// failure, not a measurement.
	convergeTimeout = 3 * time.Minute
	// warmups are repetitions run before the counted ones, so that caches,
	// connections and the Go runtime are warm for both sides of a ratio.
	warmups = 3
	// settleLimit bounds the wait for a quiet operator between repetitions.
	settleLimit = 10 * time.Second
)

// PropagationResult is P1 for one input path and one number of compute
// clusters.
type PropagationResult struct {
	// Path names the input path.
	Path     string
	Clusters int
	// Total is from the user's change until every mirror carries it;
	// Contract until the Nova's published contract does.
	Total, Contract Samples
	// Direct is the baseline: one Secret written by the program to each of
	// the clusters at once, until every watch sees it. Its samples are
	// taken between the propagation's, on the same settled system.
	Direct Samples
	// Passes is what the operator's counters moved by over the counted
	// repetitions: where the time went.
	Passes Counters
}

// directWrite is the baseline's Secret on a set of clusters, with a watch
// on each copy.
type directWrite struct {
	s        *Stack
	name     string
	clusters []*testenv.Cluster
	watches  []*secretWatch
}

// newDirectWrite creates the baseline's Secret on each cluster and opens
// the watches.
func (s *Stack) newDirectWrite(ctx context.Context, name string, clusters []*testenv.Cluster) (*directWrite, error) {
	d := &directWrite{s: s, name: name, clusters: clusters}
	for _, c := range clusters {
		if err := s.PutSecret(ctx, c.Name, Namespace, name, map[string]string{"password": "v0"}); err != nil {
			d.stop()
			return nil, err
		}
		w, err := s.watchSecret(ctx, c.Name, name)
		if err != nil {
			d.stop()
			return nil, err
		}
		d.watches = append(d.watches, w)
	}
	return d, nil
}

// sample writes value to every cluster at once and returns how long it
// took until every watch had it: the least any pipeline can take to put
// one value on these clusters.
func (d *directWrite) sample(ctx context.Context, value string) (time.Duration, error) {
	start := time.Now()
	errs := make(chan error, len(d.clusters))
	for _, c := range d.clusters {
		go func() { errs <- d.s.PutSecret(ctx, c.Name, Namespace, d.name, map[string]string{"password": value}) }()
	}
	for range d.clusters {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	last, err := waitAll(ctx, d.watches, equal("password", value), convergeTimeout)
	if err != nil {
		return 0, err
	}
	return last.Sub(start), nil
}

// stop closes the watches.
func (d *directWrite) stop() {
	for _, w := range d.watches {
		w.stop()
	}
}

// Propagation measures P1 for the first n compute clusters: a ControlPlane
// whose Nova has a pool on each, changed samples times along every input
// path, each change until every mirror carries it.
func (s *Stack) Propagation(ctx context.Context, n, samples int) ([]*PropagationResult, error) {
	clusters := s.Env.Compute[:n]
	name := fmt.Sprintf("p1-n%d", n)
	nova := name + c5c3v1alpha1.NovaSuffix
	if err := s.createControlPlane(ctx, name, "initial"); err != nil {
		return nil, err
	}
	contract, err := s.watchSecret(ctx, "mgmt", nova+novav1alpha1.RemoteComputeConfigSuffix)
	if err != nil {
		return nil, err
	}
	defer contract.stop()
	mirrors := make([]*secretWatch, 0, n)
	defer func() {
		for _, w := range mirrors {
			w.stop()
		}
	}()
	for _, c := range clusters {
		if err := s.createPool(ctx, name, name+"-"+c.Name, c.Name); err != nil {
			return nil, err
		}
		w, err := s.watchSecret(ctx, c.Name, nova+novav1alpha1.ComputeConfigSuffix)
		if err != nil {
			return nil, err
		}
		mirrors = append(mirrors, w)
	}
	if _, err := waitAll(ctx, mirrors, equal("password", "initial"), convergeTimeout); err != nil {
		return nil, fmt.Errorf("P1 with %d clusters: the first contract: %w", n, err)
	}
	direct, err := s.newDirectWrite(ctx, name+"-direct", clusters)
	if err != nil {
		return nil, err
	}
	defer direct.stop()
	var results []*PropagationResult
	for _, path := range InputPaths {
		res, err := s.measurePath(ctx, path, name, samples, direct, contract, mirrors)
		if err != nil {
			return nil, fmt.Errorf("P1 with %d clusters, %s: %w", n, path.Name, err)
		}
		res.Clusters = n
		results = append(results, res)
	}
	return results, nil
}

// measurePath takes warm-up and counted repetitions of one input path,
// each paired with a direct write.
func (s *Stack) measurePath(ctx context.Context, path InputPath, name string, samples int, direct *directWrite, contract *secretWatch, mirrors []*secretWatch) (*PropagationResult, error) {
	res := &PropagationResult{Path: path.Name}
	var before Counters
	for i := range warmups + samples {
		// The baseline's sample comes first, on the same settled system
		// as the propagation's, so that both see the same machine.
		if err := WaitSettled(ctx, settleLimit); err != nil {
			return nil, err
		}
		d, err := direct.sample(ctx, fmt.Sprintf("%s-%s-%d", name, path.Name, i))
		if err != nil {
			return nil, err
		}
		if err := WaitSettled(ctx, settleLimit); err != nil {
			return nil, err
		}
		if i == warmups {
			if before, err = Snapshot(); err != nil {
				return nil, err
			}
		}
		total, published, err := s.change(ctx, path, name, i, contract, mirrors)
		if err != nil {
			return nil, err
		}
		if i >= warmups {
			res.Direct, res.Total, res.Contract = append(res.Direct, d), append(res.Total, total), append(res.Contract, published)
		}
	}
	after, err := Snapshot()
	if err != nil {
		return nil, err
	}
	res.Passes = Delta(before, after)
	return res, nil
}

// change makes the i-th change along path and returns how long it took
// until every mirror, and until the published contract, carried it.
func (s *Stack) change(ctx context.Context, path InputPath, name string, i int, contract *secretWatch, mirrors []*secretWatch) (total, contractAt time.Duration, err error) {
	start := time.Now()
	w, err := path.change(ctx, s, name, i)
	if err != nil {
		return 0, 0, err
	}
	// The contract is awaited beside the mirrors, not before them: a watch
	// stamps an event when it is read, and the mirrors may come first.
	type arrival struct {
		at  time.Time
		err error
	}
	published := make(chan arrival, 1)
	go func() {
		at, err := contract.waitFor(ctx, w, convergeTimeout)
		published <- arrival{at, err}
	}()
	last, err := waitAll(ctx, mirrors, w, convergeTimeout)
	c := <-published
	if err = cmp.Or(err, c.err); err != nil {
		return 0, 0, err
	}
	return last.Sub(start), c.at.Sub(start), nil
}

// p1Target is the most P1 may take, in direct writes.
const p1Target = 3.0

// RunP1 starts a stack with the largest number of clusters asked for and
// measures the propagation to each number of clusters against the direct
// write to as many. Progress goes to progress; the rows are returned.
func RunP1(ctx context.Context, counts []int, samples int, logs, progress io.Writer) ([]Row, error) {
	most := slices.Max(counts)
	fmt.Fprintf(progress, "P1: starting a management cluster and %d compute clusters\n", most)
	s, err := StartStack(ctx, most, false, logs)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Env.Stop() }()
	var rows []Row
	for _, n := range counts {
		results, err := s.Propagation(ctx, n, samples)
		if err != nil {
			return nil, err
		}
		for _, r := range results {
			rows = append(rows, p1Rows(r, samples, progress)...)
		}
	}
	return rows, nil
}

// p1Rows prints one path's progress lines and returns its two rows: the
// baseline and the propagation against it.
func p1Rows(r *PropagationResult, samples int, progress io.Writer) []Row {
	direct := r.Direct.Median()
	ratio := Ratio(r.Total.Median(), direct)
	fmt.Fprintf(progress, "P1: %s, %d cluster(s): p50 %s p95 %s (contract published at p50 %s; direct write p50 %s p95 %s)\n",
		r.Path, r.Clusters, Millis(r.Total.Median()), Millis(r.Total.Percentile(0.95)), Millis(r.Contract.Median()),
		Millis(direct), Millis(r.Direct.Percentile(0.95)))
	WritePerController(progress, r.Passes, samples)
	return []Row{
		{ID: "P1", What: fmt.Sprintf("direct write to %d cluster(s) (baseline), p50", r.Clusters), Value: Millis(direct)},
		{ID: "P1", What: fmt.Sprintf("  %s to %d cluster(s), p50", r.Path, r.Clusters), Value: Millis(r.Total.Median()),
			Baseline: Millis(direct), Ratio: ratio, Target: fmt.Sprintf("<= %.0fx", p1Target), Met: Met(ratio <= p1Target)},
	}
}
