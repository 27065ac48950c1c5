package perf

import "testing"

const stepMetrics = `anvil_novacompute_pass_step_seconds_bucket{step="Nodes",le="+Inf"} 4
anvil_novacompute_pass_step_seconds_sum{step="Nodes"} 2
anvil_novacompute_pass_step_seconds_count{step="Nodes"} 4
anvil_novacompute_pass_step_seconds_sum{step="Services"} 0.5
anvil_novacompute_pass_step_seconds_count{step="Services"} 10
anvil_novacompute_pass_step_seconds_sum{other="x"} 9
anvil_novacompute_pass_step_seconds_count{other="x"} 9
anvil_novacompute_pass_step_seconds_total{step="Nodes"} 7
`

func TestParseTotals(t *testing.T) {
	got := ParseTotals(stepMetrics, "anvil_novacompute_pass_step_seconds", "step")
	want := map[string]Total{"Nodes": {Count: 4, Sum: 2}, "Services": {Count: 10, Sum: 0.5}}
	if len(got) != len(want) || got["Nodes"] != want["Nodes"] || got["Services"] != want["Services"] {
		t.Fatalf("ParseTotals = %v, want %v", got, want)
	}
}

func TestMinusAndFormatTotals(t *testing.T) {
	for _, tc := range []struct {
		name          string
		after, before map[string]Total
		want          string
	}{
		{"largest sum first", map[string]Total{"A": {Count: 2, Sum: 1}, "B": {Count: 1, Sum: 3}}, nil,
			"B 3.0 s in 1 (3000 ms each); A 1.0 s in 2 (500 ms each)"},
		{"the earlier scrape is taken out", map[string]Total{"A": {Count: 5, Sum: 2}}, map[string]Total{"A": {Count: 1, Sum: 1}},
			"A 1.0 s in 4 (250 ms each)"},
		{"a step that did not run is left out", map[string]Total{"A": {Count: 3, Sum: 1}}, map[string]Total{"A": {Count: 3, Sum: 1}},
			"none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatTotals(MinusTotals(tc.after, tc.before)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
