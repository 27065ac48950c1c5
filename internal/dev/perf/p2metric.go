package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// p2MetricWait bounds the wait for the pool to observe every node: it
// looks at a node it has not observed every 10 s, and at worst at its
// 60 s resync.
const p2MetricWait = 2 * time.Minute

// metricRows reads the pool's histogram once it holds every node, and
// prints its view of P2: the quantiles as Prometheus would estimate them
// from the buckets, and the mean.
func (s *p2Stack) metricRows(ctx context.Context, pool string, progress io.Writer) []Row {
	deadline := time.Now().Add(p2MetricWait)
	var h *dto.Histogram
	for {
		h = poolHistogram(pool)
		if (h != nil && h.GetSampleCount() >= p2Nodes) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if h == nil || h.GetSampleCount() == 0 {
		fmt.Fprintf(progress, "P2: the pool observed no node in %s\n", p2Metric)
		return []Row{{ID: "P2", What: p2Metric + ": no observation"}}
	}
	n := h.GetSampleCount()
	mean := time.Duration(h.GetSampleSum() / float64(n) * float64(time.Second))
	q := func(p float64) string { return Seconds(time.Duration(HistogramQuantile(p, h) * float64(time.Second))) }
	fmt.Fprintf(progress, "P2: %s holds %d node(s): mean %s, p50 ~%s, p95 ~%s (bucket estimates)\n", p2Metric, n, Seconds(mean), q(0.5), q(0.95))
	return []Row{
		{ID: "P2", What: fmt.Sprintf("  the pool's metric, %d nodes, p50 (bucket estimate)", n), Value: q(0.5)},
		{ID: "P2", What: fmt.Sprintf("  the pool's metric, %d nodes, p95 (bucket estimate)", n), Value: q(0.95)},
		{ID: "P2", What: fmt.Sprintf("  the pool's metric, %d nodes, mean", n), Value: Seconds(mean)},
	}
}

// poolHistogram returns the pool's series of the metric, or nil.
func poolHistogram(pool string) *dto.Histogram {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil
	}
	for _, f := range families {
		if f.GetName() != p2Metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" && l.GetValue() == pool {
					return m.GetHistogram()
				}
			}
		}
	}
	return nil
}

// HistogramQuantile estimates the q-quantile of a histogram the way
// Prometheus's histogram_quantile does: linearly within the bucket the
// rank falls into, from zero for the first one, and the highest finite
// bound when the rank falls beyond it. It returns NaN for an empty one.
func HistogramQuantile(q float64, h *dto.Histogram) float64 {
	// The gathered form leaves the +Inf bucket implicit: it is the count.
	sum := Histogram{Buckets: map[float64]float64{math.Inf(1): float64(h.GetSampleCount())}}
	for _, b := range h.GetBucket() {
		sum.Buckets[b.GetUpperBound()] = float64(b.GetCumulativeCount())
	}
	return sum.Quantile(q)
}

// ProcessStart reads when the process behind a pod runner's container ID
// (process://<pid>) started, from /proc.
func ProcessStart(containerID string) (time.Time, error) {
	pid, ok := strings.CutPrefix(containerID, "process://")
	if !ok {
		return time.Time{}, errors.New("not a process of this host: " + containerID)
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	ticks, err := StartTicks(string(stat))
	if err != nil {
		return time.Time{}, err
	}
	all, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	boot, err := BootTime(string(all))
	if err != nil {
		return time.Time{}, err
	}
	// Linux counts in USER_HZ, which is 100 on every architecture Go runs.
	return boot.Add(time.Duration(ticks) * 10 * time.Millisecond), nil
}

// StartTicks returns field 22 of a /proc/<pid>/stat line, the process's
// start in clock ticks after boot. The command name, field 2, is in
// parentheses and may hold spaces and parentheses, so fields are counted
// after its last closing one.
func StartTicks(stat string) (uint64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no command name in the stat line")
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3, the state.
	if len(fields) < 20 {
		return 0, errors.New("a short stat line")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// BootTime reads the btime line of /proc/stat.
func BootTime(stat string) (time.Time, error) {
	for line := range strings.SplitSeq(stat, "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(sec, 0), err
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}

// cleanUp deletes the pool, which drains and releases its nodes, and then
// whatever of the run is left in the shared services: the services of its
// hosts, which takes their resource providers along, and its aggregates.
// It reports nothing: a later run uses names of its own.
func (s *p2Stack) cleanUp(admin *openstack.Session, pool string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: Namespace}}
	if err := s.Env.Management.Client.Delete(ctx, p); err == nil {
		for ctx.Err() == nil && s.Env.Management.Client.Get(ctx, client.ObjectKeyFromObject(p), p) == nil {
			time.Sleep(time.Second)
		}
	}
	for _, host := range s.hosts {
		svcs, _ := admin.ListComputeServices(ctx, host)
		for _, svc := range svcs {
			_ = admin.DeleteService(ctx, svc.ID)
		}
	}
	aggs, _ := admin.ListAggregates(ctx)
	for _, a := range aggs {
		ours := a.Name == novav1alpha1.TenantFilterTestsAggregate && a.Metadata[novav1alpha1.AggregateMarkerKey] == Namespace+"/"+p2Nova
		if !ours && !strings.HasPrefix(a.Name, "p2az"+benchRun+"-") {
			continue
		}
		for _, h := range a.Hosts {
			_ = admin.RemoveAggregateHost(ctx, a.ID, h)
		}
		_ = admin.DeleteAggregate(ctx, a.ID)
	}
}
