package perf

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Total is how many observations a histogram series holds and what they
// add up to, from its _count and _sum lines.
type Total struct {
	Count, Sum float64
}

// ParseTotals reads the _count and _sum lines of a histogram metric and
// adds them up by the value of label, for a breakdown such as the pool
// pass's time per step. Series without the label are skipped.
func ParseTotals(text, metric, label string) map[string]Total {
	out := map[string]Total{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var sum bool
		rest, ok := strings.CutPrefix(line, metric+"_count{")
		if !ok {
			if rest, ok = strings.CutPrefix(line, metric+"_sum{"); !ok {
				continue
			}
			sum = true
		}
		labels, value, ok := strings.Cut(rest, "} ")
		key, found := labelValue(labels, label)
		if !ok || !found {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			continue
		}
		t := out[key]
		if sum {
			t.Sum += v
		} else {
			t.Count += v
		}
		out[key] = t
	}
	return out
}

// MinusTotals is what happened between two scrapes, label by label.
func MinusTotals(after, before map[string]Total) map[string]Total {
	out := make(map[string]Total, len(after))
	for k, a := range after {
		b := before[k]
		out[k] = Total{Count: a.Count - b.Count, Sum: a.Sum - b.Sum}
	}
	return out
}

// FormatTotals prints a breakdown, largest sum first, as
// "name 12.3 s in 456 (27 ms each)"; entries without observations are
// left out.
func FormatTotals(totals map[string]Total) string {
	keys := make([]string, 0, len(totals))
	for k, t := range totals {
		if t.Count > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(totals[b].Sum, totals[a].Sum), cmp.Compare(a, b))
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		t := totals[k]
		parts = append(parts, fmt.Sprintf("%s %.1f s in %.0f (%.0f ms each)", k, t.Sum, t.Count, 1000*t.Sum/t.Count))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
