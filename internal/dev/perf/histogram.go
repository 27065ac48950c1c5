package perf

import (
	"bufio"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Histogram is one Prometheus histogram summed over a set of series:
// cumulative counts by upper bound, as the text format's _bucket lines
// carry them.
type Histogram struct {
	// Buckets maps an upper bound to the count of observations at or
	// below it; +Inf is math.Inf(1).
	Buckets map[float64]float64
}

// ParseHistogram reads the _bucket lines of metric from a /metrics body
// in the text format and sums the series whose labels pass keep (nil
// keeps all). It is enough for the operator's own histograms, whose label
// values carry no spaces, quotes or braces.
func ParseHistogram(text, metric string, keep func(labels string) bool) Histogram {
	h := Histogram{Buckets: map[float64]float64{}}
	prefix := metric + "_bucket{"
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || (keep != nil && !keep(labels)) {
			continue
		}
		le, ok := labelValue(labels, "le")
		if !ok {
			continue
		}
		bound, err1 := strconv.ParseFloat(le, 64)
		count, err2 := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		h.Buckets[bound] += count
	}
	return h
}

// labelValue returns the value of label name in a label list such as
// `controller="x",le="0.5"`.
func labelValue(labels, name string) (string, bool) {
	for _, pair := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if ok && k == name {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// Minus is h with the observations of before taken out: what happened
// between two scrapes.
func (h Histogram) Minus(before Histogram) Histogram {
	out := Histogram{Buckets: map[float64]float64{}}
	for b, c := range h.Buckets {
		out.Buckets[b] = c - before.Buckets[b]
	}
	return out
}

// Count is the number of observations.
func (h Histogram) Count() float64 { return h.Buckets[math.Inf(1)] }

// Quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket the rank falls in, the bucket's lower
// bound when it falls in the +Inf bucket. It returns NaN for no
// observations.
func (h Histogram) Quantile(q float64) float64 {
	bounds := slices.Sorted(maps.Keys(h.Buckets))
	total := h.Count()
	if total <= 0 || len(bounds) == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		c := h.Buckets[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(c-below)
		}
		lower, below = b, c
	}
	return lower
}
