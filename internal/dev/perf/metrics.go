package perf

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counters is a snapshot of the operator's counters, keyed by metric name
// and label values, such as "controller_runtime_reconcile_total{nova-controller,success}".
type Counters map[string]float64

// watched are the metrics a snapshot keeps: what the controllers did, how
// long items waited in their queues, and what the operator asked of the
// apiservers and of OpenStack.
var watched = map[string]bool{
	"controller_runtime_reconcile_total":        true,
	"controller_runtime_reconcile_time_seconds": true,
	"workqueue_queue_duration_seconds":          true,
	"workqueue_adds_total":                      true,
	"rest_client_requests_total":                true,
	"anvil_openstack_requests_total":            true,
}

// Snapshot reads the operator's registry, which this process shares.
func Snapshot() (Counters, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := Counters{}
	for _, f := range families {
		if !watched[f.GetName()] {
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{" + labelValues(m) + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

func labelValues(m *dto.Metric) string {
	vals := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		vals = append(vals, l.GetValue())
	}
	return strings.Join(vals, ",")
}

// Delta is after minus before, keeping only what changed.
func Delta(before, after Counters) Counters {
	out := Counters{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Sum adds the values whose key starts with prefix and, when filter is
// set, passes it.
func (c Counters) Sum(prefix string, filter func(key string) bool) float64 {
	var total float64
	for k, v := range c {
		if strings.HasPrefix(k, prefix) && (filter == nil || filter(k)) {
			total += v
		}
	}
	return total
}

// WritePerController prints, per controller, the passes, the mean pass
// time and the mean queue wait within a delta, divided by n repetitions.
func WritePerController(w io.Writer, d Counters, n int) {
	controllers := map[string]bool{}
	for k := range d {
		if rest, ok := strings.CutPrefix(k, "controller_runtime_reconcile_time_seconds{"); ok {
			controllers[strings.SplitN(rest, "}", 2)[0]] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(controllers)) {
		of := func(metric, suffix string) float64 {
			return d.Sum(metric+"{", func(k string) bool { return strings.HasSuffix(k, suffix) && hasLabel(k, c) })
		}
		passes := of("controller_runtime_reconcile_time_seconds", "_count")
		if passes == 0 {
			continue
		}
		meanWait := 0.0
		if waits := of("workqueue_queue_duration_seconds", "_count"); waits > 0 {
			meanWait = of("workqueue_queue_duration_seconds", "_sum") / waits * 1000
		}
		fmt.Fprintf(w, "    %-30s %5.1f passes per change, %6.1f ms per pass, %6.1f ms queued\n", c,
			passes/float64(n), of("controller_runtime_reconcile_time_seconds", "_sum")/passes*1000, meanWait)
	}
}

// hasLabel tells whether a Counters key has value among its label values.
func hasLabel(key, value string) bool {
	open, end := strings.IndexByte(key, '{'), strings.LastIndexByte(key, '}')
	if open < 0 || end < open {
		return false
	}
	return slices.Contains(strings.Split(key[open+1:end], ","), value)
}

// settleQuiet is how long no controller may start a pass for the operator
// to count as settled.
const settleQuiet = time.Second

// WaitSettled returns once no controller has finished a pass for
// settleQuiet, so that a measurement starts on an idle operator rather
// than behind the passes the previous repetition set off. It gives up
// silently after limit: a controller with a short timer never settles,
// and the measurement then says so by its spread.
func WaitSettled(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last, err := passCount()
	if err != nil {
		return err
	}
	quietSince := time.Now()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		n, err := passCount()
		if err != nil {
			return err
		}
		if n != last {
			last, quietSince = n, time.Now()
			continue
		}
		if time.Since(quietSince) >= settleQuiet {
			return nil
		}
	}
	return nil
}

func passCount() (float64, error) {
	c, err := Snapshot()
	if err != nil {
		return 0, err
	}
	return c.Sum("controller_runtime_reconcile_total{", nil), nil
}
