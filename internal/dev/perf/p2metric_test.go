package perf

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func TestStartTicks(t *testing.T) {
	rest := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21"
	for _, tc := range []struct {
		name, stat string
		want       uint64
		err        bool
	}{
		{"plain", "123 (nova-compute)" + rest, 4242, false},
		{"spaces and parentheses in the name", "123 (a) b (c))" + rest, 4242, false},
		{"no name", "123 nova-compute" + rest, 0, true},
		{"short", "123 (x) S 1 2", 0, true},
		{"not a number", "123 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 soon", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StartTicks(tc.stat)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("StartTicks = %d, %v; want %d, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestBootTime(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Time
		err        bool
	}{
		{"present", "cpu 1 2 3\nbtime 1764662400\nprocesses 9\n", time.Unix(1764662400, 0), false},
		{"absent", "cpu 1 2 3\n", time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BootTime(tc.stat)
			if (err != nil) != tc.err || !got.Equal(tc.want) {
				t.Fatalf("BootTime = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	hist := func(counts ...uint64) *dto.Histogram {
		bounds := []float64{5, 10, 20, math.Inf(1)}
		h := &dto.Histogram{SampleCount: ptr(counts[len(counts)-1])}
		for i, c := range counts {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr(bounds[i]), CumulativeCount: ptr(c)})
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    *dto.Histogram
		q    float64
		want float64
	}{
		{"empty", hist(0, 0, 0, 0), 0.5, math.NaN()},
		{"within the first bucket, from zero", hist(10, 10, 10, 10), 0.5, 2.5},
		{"within the second bucket", hist(0, 10, 10, 10), 0.5, 7.5},
		{"across buckets", hist(5, 5, 10, 10), 0.95, 19},
		{"beyond the last finite bound", hist(0, 0, 0, 4), 0.5, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HistogramQuantile(tc.q, tc.h)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(tc.want) && math.Abs(got-tc.want) > 1e-9) {
				t.Fatalf("HistogramQuantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
