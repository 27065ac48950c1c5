package perf

import (
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

// PropagationResult is P1 for one number of compute clusters.
type PropagationResult struct {
	Clusters int
	// Total is from the service password's write until every mirror
	// carries it; Contract until the Nova's published contract does.
	Total, Contract Samples
	// FanOut is the ideal: the same Secret written directly to each of the
	// clusters at once, until every watch sees it.
	FanOut Samples
	// Passes is what the operator's counters moved by over the counted
	// repetitions: where the time went.
	Passes Counters
}

// DirectWrite is P1's baseline: one Secret written on one compute cluster,
// from the write until its watch delivers the change. The propagation is
// measured the same way, so the ratio is what the pipeline adds.
func (s *Stack) DirectWrite(ctx context.Context, samples int) (Samples, error) {
	return s.fanOut(ctx, "p1-direct", s.Env.Compute[:1], samples)
}

// fanOut writes one Secret to each given cluster at once and waits until
// every watch has the value.
func (s *Stack) fanOut(ctx context.Context, name string, clusters []*testenv.Cluster, samples int) (Samples, error) {
	var watches []*secretWatch
	defer func() {
		for _, w := range watches {
			w.stop()
		}
	}()
	for _, c := range clusters {
		if err := s.PutSecret(ctx, c.Name, Namespace, name, map[string]string{"password": "v0"}); err != nil {
			return nil, err
		}
		w, err := s.watchSecret(ctx, c.Name, name, "password")
		if err != nil {
			return nil, err
		}
		watches = append(watches, w)
	}
	var out Samples
	for i := range warmups + samples {
		if err := WaitSettled(ctx, settleLimit); err != nil {
			return nil, err
		}
		value := fmt.Sprintf("%s-%d", name, i)
		start := time.Now()
		errs := make(chan error, len(clusters))
		for _, c := range clusters {
			go func() { errs <- s.PutSecret(ctx, c.Name, Namespace, name, map[string]string{"password": value}) }()
		}
		for range clusters {
			if err := <-errs; err != nil {
				return nil, err
			}
		}
		last, err := waitAll(ctx, watches, value, convergeTimeout)
		if err != nil {
			return nil, err
		}
		if i >= warmups {
			out = append(out, last.Sub(start))
		}
	}
	return out, nil
}

// Propagation measures P1 for the first n compute clusters: a ControlPlane
// whose Nova has a pool on each, and its service password changed samples
// times, each until every mirror carries it.
func (s *Stack) Propagation(ctx context.Context, n, samples int) (*PropagationResult, error) {
	clusters := s.Env.Compute[:n]
	name := fmt.Sprintf("p1-n%d", n)
	nova := name + c5c3v1alpha1.NovaSuffix
	if err := s.createControlPlane(ctx, name, "initial"); err != nil {
		return nil, err
	}
	contract, err := s.watchSecret(ctx, "mgmt", nova+novav1alpha1.RemoteComputeConfigSuffix, "password")
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
		w, err := s.watchSecret(ctx, c.Name, nova+novav1alpha1.ComputeConfigSuffix, "password")
		if err != nil {
			return nil, err
		}
		mirrors = append(mirrors, w)
	}
	if _, err := waitAll(ctx, mirrors, "initial", convergeTimeout); err != nil {
		return nil, fmt.Errorf("P1 with %d clusters: the first contract: %w", n, err)
	}
	res := &PropagationResult{Clusters: n}
	var before Counters
	for i := range warmups + samples {
		if err := WaitSettled(ctx, settleLimit); err != nil {
			return nil, err
		}
		if i == warmups {
			if before, err = Snapshot(); err != nil {
				return nil, err
			}
		}
		value := fmt.Sprintf("%s-%d", name, i)
		start := time.Now()
		if err := s.PutSecret(ctx, "mgmt", Namespace, name+"-nova-password", map[string]string{"password": value}); err != nil {
			return nil, err
		}
		published, err := contract.waitFor(ctx, value, convergeTimeout)
		if err != nil {
			return nil, err
		}
		last, err := waitAll(ctx, mirrors, value, convergeTimeout)
		if err != nil {
			return nil, err
		}
		if i >= warmups {
			res.Total = append(res.Total, last.Sub(start))
			res.Contract = append(res.Contract, published.Sub(start))
		}
	}
	after, err := Snapshot()
	if err != nil {
		return nil, err
	}
	res.Passes = Delta(before, after)
	if res.FanOut, err = s.fanOut(ctx, name+"-fanout", clusters, samples); err != nil {
		return nil, err
	}
	return res, nil
}

// p1Target is the most P1 may take, in direct writes.
const p1Target = 3.0

// RunP1 starts a stack with the largest number of clusters asked for and
// measures the baseline and the propagation to each number of clusters.
// Progress goes to progress; the rows are returned.
func RunP1(ctx context.Context, counts []int, samples int, logs, progress io.Writer) ([]Row, error) {
	most := slices.Max(counts)
	fmt.Fprintf(progress, "P1: starting a management cluster and %d compute clusters\n", most)
	s, err := StartStack(ctx, most, false, logs)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Env.Stop() }()
	direct, err := s.DirectWrite(ctx, samples)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	fmt.Fprintf(progress, "P1: direct write p50 %s p95 %s\n", Millis(direct.Median()), Millis(direct.Percentile(0.95)))
	rows := []Row{{ID: "P1", What: "direct Secret write on one cluster (baseline), p50", Value: Millis(direct.Median())}}
	for _, n := range counts {
		r, err := s.Propagation(ctx, n, samples)
		if err != nil {
			return nil, err
		}
		ratio := Ratio(r.Total.Median(), direct.Median())
		fmt.Fprintf(progress, "P1: %d cluster(s): p50 %s p95 %s (contract published at p50 %s; direct fan-out p50 %s)\n", n,
			Millis(r.Total.Median()), Millis(r.Total.Percentile(0.95)), Millis(r.Contract.Median()), Millis(r.FanOut.Median()))
		WritePerController(progress, r.Passes, samples)
		rows = append(rows,
			Row{ID: "P1", What: fmt.Sprintf("propagation to %d cluster(s), p50", n), Value: Millis(r.Total.Median()),
				Baseline: Millis(direct.Median()), Ratio: ratio, Target: fmt.Sprintf("<= %.0fx", p1Target), Met: Met(ratio <= p1Target)},
			Row{ID: "P1", What: fmt.Sprintf("  direct fan-out to %d cluster(s), p50", n), Value: Millis(r.FanOut.Median()),
				Baseline: Millis(direct.Median()), Ratio: Ratio(r.FanOut.Median(), direct.Median())},
		)
	}
	return rows, nil
}
