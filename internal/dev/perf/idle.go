package perf

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// IdleOptions shape P3.
type IdleOptions struct {
	// Pools is how many settled pools the operator keeps, each with one
	// node running a real nova-compute.
	Pools int
	// Window is how long the settled operator is observed.
	Window time.Duration
}

const (
	// idleSettleTimeout bounds the wait for every pool to settle; starting
	// thirty nova-compute processes on a small machine takes minutes.
	idleSettleTimeout = 20 * time.Minute
	// idleQuiet is how long the operator must write nothing before the
	// window opens, so that it starts after convergence's last write.
	idleQuiet = 15 * time.Second
	// teardownTimeout bounds the cleanup after the measurement.
	teardownTimeout = 8 * time.Minute
)

// openstackRequests is the counter of the operator's OpenStack requests,
// labelled method and service.
const openstackRequests = "anvil_openstack_requests_total{"

// IdleResult is what P3 observed in its window.
type IdleResult struct {
	Pools  int
	Window time.Duration
	// Requests are the operator's apiserver requests by cluster and verb,
	// from the audit logs.
	Requests map[string]map[string]int
	// Resources counts the operator's requests by "cluster verb
	// resource", to say where they go.
	Resources map[string]int
	// Minutes are the operator's writes and reads in each whole minute of
	// the window, and its OpenStack requests.
	Minutes []IdleMinute
	// Counters are what the operator's counters moved by in the window.
	Counters Counters
}

// IdleMinute is one minute of the window.
type IdleMinute struct {
	Writes, Reads int
	OpenStack     float64
}

// RunP3 measures what a settled operator costs: with pools settled pools
// on the real OpenStack services, it counts for a window the operator's
// requests to the apiservers, from their audit logs, and to Keystone, Nova
// and Placement, from its own counter. Progress goes to progress.
func RunP3(ctx context.Context, opts IdleOptions, logs, progress io.Writer) ([]Row, error) {
	say := func(format string, args ...any) { fmt.Fprintf(progress, format+"\n", args...) }
	say("P3: starting the OpenStack services")
	cloud, release, err := openstacktest.StartWithNova(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	say("P3: starting a management cluster, a compute cluster with %d nodes and the operator", opts.Pools)
	s, err := startIdleStack(ctx, cloud, opts.Pools, logs)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	defer func() {
		// The cleanup runs even when ctx was cancelled.
		tctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		defer cancel()
		say("P3: tearing down")
		s.tearDown(tctx, say)
	}()
	s.sweepCloud(ctx, say)
	if err := createCloudControlPlane(ctx, s.env.Management.Client, s.cloud.Local(), p3ControlPlane, "p3-metadata-"+s.run); err != nil {
		return nil, err
	}
	if err := s.createPools(ctx); err != nil {
		return nil, err
	}
	started := time.Now()
	if err := s.waitSettledPools(ctx, idleSettleTimeout, say); err != nil {
		return nil, err
	}
	say("P3: %d pools settled in %s", opts.Pools, time.Since(started).Round(time.Second))
	s.waitQuiet(ctx, say)
	res, err := s.observe(ctx, opts.Window, say)
	if err != nil {
		return nil, err
	}
	res.Pools = opts.Pools
	res.write(progress)
	return res.Rows(), nil
}

// clusters are the clusters whose audit logs P3 reads.
func (s *idleStack) clusters() []*testenv.Cluster {
	return []*testenv.Cluster{s.env.Management, s.compute}
}

// operatorRequests returns the operator's requests on c after mark, and
// the mark to read on from.
func operatorRequests(c *testenv.Cluster, mark int64) ([]testenv.AuditEvent, int64, error) {
	all, next, err := c.AuditRequests(mark)
	var out []testenv.AuditEvent
	for _, e := range all {
		if e.ByOperator() {
			out = append(out, e)
		}
	}
	return out, next, err
}

// waitQuiet waits, for at most two pool resyncs, until the operator has
// written nothing for idleQuiet, and says what it wrote meanwhile. An
// operator that never goes quiet is measured anyway: the window shows it.
func (s *idleStack) waitQuiet(ctx context.Context, say func(string, ...any)) {
	marks := make([]int64, 2)
	for i, c := range s.clusters() {
		marks[i], _ = c.AuditMark()
	}
	last := time.Now()
	deadline := last.Add(2 * novacompute.DefaultResync)
	writes := map[string]int{}
	for time.Now().Before(deadline) && time.Since(last) < idleQuiet && ctx.Err() == nil {
		time.Sleep(time.Second)
		for i, c := range s.clusters() {
			evs, next, err := operatorRequests(c, marks[i])
			if err != nil {
				say("P3: reading the audit log of %s: %v", c.Name, err)
				return
			}
			marks[i] = next
			for _, e := range evs {
				if testenv.IsWriteVerb(e.Verb) {
					last = time.Now()
					writes[c.Name+": "+e.Verb+" "+resourceOf(e)]++
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(writes)) {
		say("P3: after settling, before the window: %s x%d", k, writes[k])
	}
	if time.Since(last) < idleQuiet {
		say("P3: the operator did not stay quiet for %s within %s", idleQuiet, 2*novacompute.DefaultResync)
	}
}

// resourceOf names what a request touched, such as "novacomputes/status".
func resourceOf(e testenv.AuditEvent) string {
	r := e.Resource
	if r == "" {
		return "(non-resource)"
	}
	if e.Subresource != "" {
		r += "/" + e.Subresource
	}
	return r
}

// observe counts the operator's requests for window, with a progress line
// per minute.
func (s *idleStack) observe(ctx context.Context, window time.Duration, say func(string, ...any)) (*IdleResult, error) {
	res := &IdleResult{Window: window, Requests: map[string]map[string]int{}, Resources: map[string]int{}}
	marks := make([]int64, 2)
	for i, c := range s.clusters() {
		m, err := c.AuditMark()
		if err != nil {
			return nil, err
		}
		marks[i] = m
	}
	before, err := Snapshot()
	if err != nil {
		return nil, err
	}
	say("P3: observing the settled operator for %s", window)
	start, prev := time.Now(), before
	for elapsed := time.Duration(0); elapsed < window; {
		step := min(time.Minute, window-elapsed)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(step):
		}
		elapsed += step
		now, err := Snapshot()
		if err != nil {
			return nil, err
		}
		minute := IdleMinute{OpenStack: Delta(prev, now).Sum(openstackRequests, nil)}
		prev = now
		for i, c := range s.clusters() {
			evs, next, err := operatorRequests(c, marks[i])
			if err != nil {
				return nil, err
			}
			marks[i] = next
			minute.Writes, minute.Reads = res.add(c.Name, evs, minute.Writes, minute.Reads)
		}
		res.Minutes = append(res.Minutes, minute)
		say("P3: minute %d: %d writes, %d reads, %.0f OpenStack requests", len(res.Minutes), minute.Writes, minute.Reads, minute.OpenStack)
	}
	res.Window = time.Since(start)
	res.Counters = Delta(before, prev)
	return res, nil
}

// add counts evs of cluster into the result and returns the running
// writes and reads (watches excluded) of the minute.
func (r *IdleResult) add(cluster string, evs []testenv.AuditEvent, writes, reads int) (int, int) {
	if r.Requests[cluster] == nil {
		r.Requests[cluster] = map[string]int{}
	}
	for _, e := range evs {
		r.Requests[cluster][e.Verb]++
		r.Resources[cluster+" "+e.Verb+" "+resourceOf(e)]++
		switch {
		case testenv.IsWriteVerb(e.Verb):
			writes++
		case e.Verb != "watch":
			reads++
		}
	}
	return writes, reads
}
