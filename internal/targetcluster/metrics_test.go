package targetcluster

import (
	"maps"
	"testing"

	"github.com/anvil/anvil/internal/dev/metricstest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// reachability reads every series of the per-cluster gauge, by cluster.
func reachability(t *testing.T) map[string]float64 {
	t.Helper()
	return metricstest.GaugesByLabel(t, clusterReachable)
}

// gaugeValue reads a plain gauge.
func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var d dto.Metric
	if err := g.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetGauge().GetValue()
}

// The per-cluster gauge follows the registry's maps: an engaged cluster
// reads its probe, a registered one the operator cannot use reads 0, and a
// name whose registration is gone has no series, so no alert pages for a
// cluster that was removed on purpose.
func TestUpdateGaugesReachability(t *testing.T) {
	t.Cleanup(clusterReachable.Reset)
	up, down := &engagement{name: "up"}, &engagement{name: "down"}
	up.healthy.Store(true)
	r := &Registry{
		clusters: map[string]*engagement{"up": up, "down": down},
		pending: map[string]string{
			"refused": "its registration Secret was refused (no kubeconfig)",
			"failing": NotConnectedReason,
			"gone":    notRegisteredReason,
			// A pending reason left from before an engagement does not
			// override the engaged cluster's probe.
			"up": NotConnectedReason,
		},
	}
	clusterReachable.WithLabelValues("gone").Set(1)
	clusterReachable.DeleteLabelValues("gone")
	r.updateGauges()

	want := map[string]float64{"up": 1, "down": 0, "refused": 0, "failing": 0}
	if got := reachability(t); !maps.Equal(got, want) {
		t.Errorf("series %v, want %v (none for the unregistered name)", got, want)
	}
	if got := gaugeValue(t, clustersUnreachable); got != 1 {
		t.Errorf("anvil_target_clusters_unreachable = %v, want 1", got)
	}
}

// Removing a registration removes its series.
func TestDisengageUnregisteredDropsTheSeries(t *testing.T) {
	t.Cleanup(clusterReachable.Reset)
	r := &Registry{clusters: map[string]*engagement{}, pending: map[string]string{}}
	r.setPending("c1", NotConnectedReason)
	if got := reachability(t); len(got) != 1 || got["c1"] != 0 {
		t.Fatalf("series %v after a failed engagement, want c1 at 0", got)
	}
	r.disengage("c1", notRegisteredReason)
	if got := reachability(t); len(got) != 0 {
		t.Errorf("series %v after the registration went, want none", got)
	}
}
