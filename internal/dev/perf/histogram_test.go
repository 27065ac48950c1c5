package perf

import (
	"math"
	"strings"
	"testing"
)

const sampleMetrics = `# HELP controller_runtime_reconcile_time_seconds Length of time per reconciliation per controller
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="0.1"} 90
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="1"} 99
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="+Inf"} 100
controller_runtime_reconcile_time_seconds_sum{controller="a"} 12
controller_runtime_reconcile_time_seconds_count{controller="a"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="b",le="0.1"} 0
controller_runtime_reconcile_time_seconds_bucket{controller="b",le="1"} 0
controller_runtime_reconcile_time_seconds_bucket{controller="b",le="+Inf"} 100
workqueue_depth{name="a"} 3
`

func TestParseHistogram(t *testing.T) {
	all := ParseHistogram(sampleMetrics, "controller_runtime_reconcile_time_seconds", nil)
	if all.Count() != 200 || all.Buckets[0.1] != 90 {
		t.Errorf("all: %v", all.Buckets)
	}
	a := ParseHistogram(sampleMetrics, "controller_runtime_reconcile_time_seconds", func(l string) bool { return strings.HasPrefix(l, `controller="a",`) })
	if a.Count() != 100 || a.Buckets[1] != 99 {
		t.Errorf("a: %v", a.Buckets)
	}
	if d := all.Minus(a); d.Count() != 100 || d.Buckets[0.1] != 0 {
		t.Errorf("all minus a: %v", d.Buckets)
	}
}

func TestQuantile(t *testing.T) {
	h := func(b map[float64]float64) Histogram { return Histogram{Buckets: b} }
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		{"within the first bucket, from zero", h(map[float64]float64{1: 100, inf: 100}), 0.5, 0.5},
		{"interpolated in the second bucket", h(map[float64]float64{0.1: 90, 1: 100, inf: 100}), 0.95, 0.55},
		{"in +Inf takes the highest bound", h(map[float64]float64{0.1: 10, inf: 100}), 0.99, 0.1},
		{"an empty bucket at the rank takes its bound", h(map[float64]float64{0.1: 99, 1: 99, inf: 99}), 1, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.Quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if got := h(map[float64]float64{}).Quantile(0.99); !math.IsNaN(got) {
		t.Errorf("no observations: %v, want NaN", got)
	}
}
