package targetcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The registry's metrics. Labels are fixed words, with one exception: the
// per-cluster reachability gauge is labelled with the cluster's name, the
// registration Secret's name that targetClusterRef values use. There is one
// such name per registration, chosen by the administrator, so the series
// are as few as the compute clusters; nothing else of a registration (its
// server, its credentials) ever becomes a label value.
var (
	clustersEngaged = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "anvil_target_clusters_engaged",
		Help: "Compute clusters with a running client and cache.",
	})
	clustersUnreachable = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "anvil_target_clusters_unreachable",
		Help: "Engaged compute clusters whose apiserver does not answer its readiness probe.",
	})
	engagementsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "anvil_target_cluster_engagements_total",
		Help: "Times a compute cluster's client and cache were built from its registration Secret.",
	})
	engagementFailuresTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "anvil_target_cluster_engagement_failures_total",
		Help: "Attempts to engage a compute cluster that failed and will be retried.",
	})
	endpointChangesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "anvil_target_cluster_endpoint_changes_total",
		Help: "Acknowledged changes of an engaged compute cluster's server or certificate authority that took effect.",
	})
	clusterReachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anvil_target_cluster_reachable",
		Help: "1 while a registered compute cluster is engaged and its apiserver passes the readiness probe; 0 while it is registered but not usable (not engaged yet, refused, or failing the probe). No series once its registration Secret is gone.",
	}, []string{"cluster"})
	refusalsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "anvil_target_cluster_refusals_total",
		Help: "Registration Secrets refused, by reason.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(clustersEngaged, clustersUnreachable, engagementsTotal, engagementFailuresTotal, endpointChangesTotal, refusalsTotal, clusterReachable)
}

// notRegisteredReason is why a name without a registration Secret does not
// resolve; such a name has no reachability series.
const notRegisteredReason = "it is not registered"

// boolValue is a gauge's value for a yes/no state.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
