package monitoring_test

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// scrapeLabels are the labels Prometheus adds to every scraped series; the
// operator's registry does not know them.
var scrapeLabels = []string{"job", "instance"}

// inventory maps each exported metric to its label names, as
// testdata/exported-metrics.txt lists them.
type inventory map[string][]string

// loadInventory reads testdata/exported-metrics.txt, which
// TestExportedMetricsInventory in internal/operator compares with the
// operator's registry.
func loadInventory(t *testing.T) inventory {
	t.Helper()
	f, err := os.Open("testdata/exported-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inv := inventory{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, _ := strings.Cut(line, " ")
		inv[name] = nil
		if labels != "" {
			inv[name] = strings.Split(labels, ",")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return inv
}

// labelsOf returns the label names a series of the named family carries
// when scraped, and whether the family is exported. A histogram's
// _bucket, _sum and _count series are looked up by the histogram's name,
// _bucket with le added. The registry's descriptors do not say which
// metrics are histograms, so a counter's name with _bucket passes too; the
// alerts and panels name real histograms, and the PromQL they use on them
// (histogram_quantile) is what a reader checks.
func (inv inventory) labelsOf(name string) ([]string, bool) {
	if labels, ok := inv[name]; ok {
		return append(slices.Clone(labels), scrapeLabels...), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if labels, ok := inv[base]; ok {
			labels = append(slices.Clone(labels), scrapeLabels...)
			if suffix == "_bucket" {
				labels = append(labels, "le")
			}
			return labels, true
		}
	}
	return nil, false
}

// checkSeries fails unless a series of this name and exactly these label
// names is one the operator exports.
func (inv inventory) checkSeries(name string, labels map[string]string) error {
	want, ok := inv.labelsOf(name)
	if !ok {
		return fmt.Errorf("the operator exports no metric %s", name)
	}
	var got []string
	for l := range labels {
		got = append(got, l)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("a series of %s has labels %v; the operator's, with the scrape's, are %v", name, got, want)
	}
	return nil
}

// The check itself: an exported name and its labels pass, a renamed metric
// or label does not.
func TestInventoryCheckSeries(t *testing.T) {
	inv := inventory{"anvil_x": {"pool"}, "anvil_h_seconds": {"pool"}}
	scrape := map[string]string{"job": job, "instance": "i"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range scrape {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		ok     bool
	}{
		{"anvil_x", with(map[string]string{"pool": "a"}), true},
		{"anvil_y", with(map[string]string{"pool": "a"}), false},
		{"anvil_x", with(map[string]string{"pool_name": "a"}), false},
		{"anvil_x", with(nil), false},
		{"anvil_x", map[string]string{"pool": "a"}, false},
		{"anvil_h_seconds_bucket", with(map[string]string{"pool": "a", "le": "1"}), true},
		{"anvil_h_seconds_bucket", with(map[string]string{"pool": "a"}), false},
		{"anvil_h_seconds_count", with(map[string]string{"pool": "a"}), true},
	} {
		if err := inv.checkSeries(tc.name, tc.labels); (err == nil) != tc.ok {
			t.Errorf("checkSeries(%s, %v) = %v, want ok %v", tc.name, tc.labels, err, tc.ok)
		}
	}
}
