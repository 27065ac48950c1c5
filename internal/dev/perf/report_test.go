package perf

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) Samples {
		s := make(Samples, len(v))
		for i, x := range v {
			s[i] = time.Duration(x) * time.Millisecond
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    Samples
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.95, 7 * time.Millisecond},
		{"median of odd", ms(5, 1, 3), 0.5, 3 * time.Millisecond},
		{"median of even takes the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p95 of twenty is the 19th", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 0.95, 19 * time.Millisecond},
		{"p100 is the largest", ms(9, 1, 5), 1, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Percentile(tc.q); got != tc.want {
				t.Fatalf("Percentile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b time.Duration
		want float64
	}{
		{3, 1, 3}, {1, 2, 0.5}, {1, 0, 0},
	} {
		if got := Ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("Ratio(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	rows := []Row{
		{ID: "P1", What: "propagation, 4 clusters", Value: "5.0 ms", Baseline: "2.0 ms", Ratio: 2.5, Target: "<= 3x", Met: Met(true)},
		{ID: "P3", What: "writes per minute", Value: "0", Target: "0", Met: Met(false)},
		{ID: "P4", What: "peak RSS", Value: "120 MB"},
	}
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"2.50x", "met", "MISSED", "P4  ", "VERDICT"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 4 {
		t.Errorf("table has %d lines, want 4:\n%s", lines, out)
	}
}

func TestOperatorShareRow(t *testing.T) {
	cases := []struct {
		name          string
		ready, rolled time.Duration
		value         string
		met           *bool
	}{
		{"within the target", 270 * time.Second, 262 * time.Second, "8.0 s", Met(true)},
		{"past the target", 318500 * time.Millisecond, 262 * time.Second, "56.5 s", Met(false)},
		{"the rollout never sampled", 300 * time.Second, 0, "-", nil},
		{"Ready sampled before the rollout", 100 * time.Second, 101 * time.Second, "0.0 s", Met(true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := operatorShareRow(tc.ready, tc.rolled)
			if r.Value != tc.value || (r.Met == nil) != (tc.met == nil) || (r.Met != nil && *r.Met != *tc.met) {
				t.Errorf("row = %q %v, want %q %v", r.Value, r.Met, tc.value, tc.met)
			}
		})
	}
}
