// Package monitoring holds no code: its tests render the operator chart's
// PrometheusRule and Grafana dashboard and check them against the metrics
// the operator exports, listed in testdata/exported-metrics.txt, which
// internal/operator's tests keep in step with the operator's registry.
//
// It is a module of its own so that the Prometheus module, which the tests
// need to parse and evaluate the rules, stays out of Anvil's go.mod; see
// docs/design/monitoring.md.
package monitoring
