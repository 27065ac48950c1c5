// Package metricstest reads what a Prometheus collector exports, for tests
// of the operator's own gauges.
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// GaugesByLabel collects c and returns each series' gauge value keyed by
// the value of its first label, which is how a one-label gauge vector is
// read.
func GaugesByLabel(t testing.TB, c prometheus.Collector) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		out[d.GetLabel()[0].GetValue()] = d.GetGauge().GetValue()
	}
	return out
}
