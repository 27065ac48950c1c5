package targetcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The registry's metrics. Labels are fixed words: a cluster name or any part
// of a registration never becomes a label value.
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
	refusalsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "anvil_target_cluster_refusals_total",
		Help: "Registration Secrets refused, by reason.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(clustersEngaged, clustersUnreachable, engagementsTotal, engagementFailuresTotal, endpointChangesTotal, refusalsTotal)
}
