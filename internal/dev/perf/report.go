package perf

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Samples are the durations of one measurement's repetitions.
type Samples []time.Duration

// Percentile returns the q-quantile (0 < q <= 1) by the nearest-rank
// method, or zero for no samples.
func (s Samples) Percentile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	rank := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Median is the 0.5-quantile.
func (s Samples) Median() time.Duration { return s.Percentile(0.5) }

// Ratio is a over b, or zero when b is zero.
func Ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Row is one line of the report.
type Row struct {
	// ID is the measurement, such as P1.
	ID string
	// What says what was measured.
	What string
	// Value is the measured value, and Baseline the value it is compared
	// with, both as printed.
	Value, Baseline string
	// Ratio is Value over Baseline; zero prints as "-".
	Ratio float64
	// Target is the goal as printed, and Met whether it holds; Met is nil
	// for a row without a target.
	Target string
	Met    *bool
}

// Verdict prints whether a row meets its target.
func (r Row) Verdict() string {
	switch {
	case r.Met == nil:
		return "-"
	case *r.Met:
		return "met"
	}
	return "MISSED"
}

// Met is a helper for Row.Met.
func Met(ok bool) *bool { return &ok }

// WriteTable prints rows as an aligned table.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMEASUREMENT\tVALUE\tBASELINE\tRATIO\tTARGET\tVERDICT")
	for _, r := range rows {
		ratio := "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.What, dash(r.Value), dash(r.Baseline), ratio, dash(r.Target), r.Verdict())
	}
	return tw.Flush()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// Millis prints a duration in milliseconds with one decimal.
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
