package monitoring_test

import (
	"math"
	"time"
)

// scenario describes one alert's problem and a healthy fleet next to it,
// as series over span.
type scenario struct {
	firing  func(s *store, span time.Duration)
	healthy func(s *store, span time.Duration)
}

// phases are the pool gauge's phases; the operator sets every one on each
// pass, an empty phase to 0.
var phases = []string{"Pending", "Active", "Draining", "Releasing", "Conflict"}

// nodes records a pool's node gauge, with count(phase, since) nodes in each
// phase.
func nodes(s *store, pool string, count func(phase string, since time.Duration) float64) {
	for _, ph := range phases {
		s.add("anvil_novacompute_nodes", map[string]string{"namespace": "openstack", "pool": pool, "phase": ph},
			func(since time.Duration) float64 { return count(ph, since) })
	}
}

// condition records the condition gauge of one object the way the
// operator exports it: 1 on the series of the current status, 0 on the two
// others, from both replicas, since each reads its own cache. status says
// the status at each time. An alert must still fire once per object.
func condition(s *store, kind, name, condType string, status func(since time.Duration) string) {
	conditionWithReason(s, kind, name, condType, "Some", status)
}

// conditionWithReason is condition under one reason throughout.
func conditionWithReason(s *store, kind, name, condType, reason string, status func(since time.Duration) string) {
	for _, instance := range []string{leader, follower} {
		for _, st := range []string{"True", "False", "Unknown"} {
			s.addFrom(job, instance, "anvil_object_condition",
				map[string]string{"kind": kind, "namespace": "openstack", "name": name, "type": condType, "status": st, "reason": reason},
				func(since time.Duration) float64 {
					if status(since) == st {
						return 1
					}
					return 0
				})
		}
	}
}

// statusUntil is status a before the given time and b from then on.
func statusUntil(at time.Duration, a, b string) func(time.Duration) string {
	return func(since time.Duration) string {
		if since < at {
			return a
		}
		return b
	}
}

// failedBuilds records the failed-builds gauge of one node of pool rack-1.
func failedBuilds(s *store, node string, value func(time.Duration) float64) {
	s.add("anvil_novacompute_failed_builds", map[string]string{"namespace": "openstack", "pool": "rack-1", "node": node}, value)
}

// reconciles records one controller's reconcile counters in a job: passes
// per second, and the share of them that fail.
func reconciles(s *store, scrapeJob, controller string, rate, errorShare float64) {
	for _, result := range []string{"success", "error", "requeue", "requeue_after"} {
		r := 0.0
		switch result {
		case "success":
			r = rate * (1 - errorShare)
		case "error":
			r = rate * errorShare
		}
		s.addScrape(scrapeJob, "controller_runtime_reconcile_total", map[string]string{"controller": controller, "result": result}, perSecond(r))
	}
	s.addScrape(scrapeJob, "controller_runtime_reconcile_errors_total", map[string]string{"controller": controller}, perSecond(rate*errorShare))
}

// certExpiry records a server's certificate expiry, left before the
// series' end.
func certExpiry(s *store, server string, span, left time.Duration) {
	s.add("anvil_serving_certificate_expiry_timestamp_seconds", map[string]string{"server": server},
		constant(float64(epoch.Add(span+left).Unix())))
}

// scenarios holds one scenario per alert of files/prometheus-rules.yaml;
// TestAlertsFireOnTheirProblemOnly fails for an alert without one.
var scenarios = map[string]scenario{
	"AnvilComputeClusterUnreachable": {
		firing: func(s *store, _ time.Duration) {
			s.add("anvil_target_cluster_reachable", map[string]string{"cluster": "compute-a"}, constant(1))
			s.add("anvil_target_cluster_reachable", map[string]string{"cluster": "compute-b"}, constant(0))
		},
		// An apiserver restart of three minutes is no outage.
		healthy: func(s *store, span time.Duration) {
			s.add("anvil_target_cluster_reachable", map[string]string{"cluster": "compute-a"}, constant(1))
			s.add("anvil_target_cluster_reachable", map[string]string{"cluster": "compute-b"}, func(since time.Duration) float64 {
				if since > span-3*time.Minute {
					return 0
				}
				return 1
			})
		},
	},
	"AnvilPoolNodesNotSchedulable": {
		firing: func(s *store, _ time.Duration) {
			nodes(s, "rack-1", func(ph string, _ time.Duration) float64 {
				return map[string]float64{"Pending": 2, "Active": 10}[ph]
			})
		},
		// Nodes that onboard in ten minutes, and a Draining one.
		healthy: func(s *store, span time.Duration) {
			nodes(s, "rack-1", func(ph string, since time.Duration) float64 {
				onboarded := since > span-50*time.Minute
				switch {
				case ph == "Pending" && !onboarded && since > span-60*time.Minute:
					return 3
				case ph == "Active" && onboarded:
					return 13
				case ph == "Active":
					return 10
				case ph == "Draining":
					return 1
				}
				return 0
			})
		},
	},
	"AnvilFailedBuildsRising": {
		firing: func(s *store, span time.Duration) {
			// One more failure every five minutes over the last half hour.
			failedBuilds(s, "node-7", func(since time.Duration) float64 {
				return max(0, math.Floor((since-(span-35*time.Minute)).Minutes()/5))
			})
			failedBuilds(s, "node-8", constant(0))
		},
		// A failure that a later build reset, and old failures on a node
		// that has built nothing since.
		healthy: func(s *store, span time.Duration) {
			failedBuilds(s, "node-7", func(since time.Duration) float64 {
				if since > span-40*time.Minute && since < span-20*time.Minute {
					return 2
				}
				return 0
			})
			failedBuilds(s, "node-8", constant(4))
		},
	},
	"AnvilComputeRotationIncomplete": {
		firing: func(s *store, _ time.Duration) {
			condition(s, "ControlPlane", "region-1", "ComputeRotationComplete", statusUntil(0, "False", "False"))
			condition(s, "ControlPlane", "region-2", "ComputeRotationComplete", statusUntil(0, "True", "True"))
		},
		// A rotation that took two hours; a NovaCompute's condition of the
		// same type would not count, but pools have none.
		healthy: func(s *store, span time.Duration) {
			condition(s, "ControlPlane", "region-1", "ComputeRotationComplete", statusUntil(span-10*time.Hour, "False", "True"))
			condition(s, "ControlPlane", "region-2", "ComputeRotationComplete", statusUntil(span-2*time.Hour, "True", "False"))
		},
	},
	"AnvilComputeConfigMirrorRefused": {
		firing: func(s *store, _ time.Duration) {
			conditionWithReason(s, "ControlPlane", "region-1", "NovaReady", "NovaComputeConfigError", statusUntil(0, "False", "False"))
		},
		// A refusal of five minutes, a NovaReady that waits on another cause
		// for long, and a pool's own NovaReady False, which is the pool's
		// business.
		healthy: func(s *store, span time.Duration) {
			conditionWithReason(s, "ControlPlane", "region-1", "NovaReady", "NovaComputeConfigError", statusUntil(span-5*time.Minute, "True", "False"))
			conditionWithReason(s, "ControlPlane", "region-2", "NovaReady", "WaitingForNova", statusUntil(0, "False", "False"))
			conditionWithReason(s, "NovaCompute", "rack-1", "NovaReady", "NovaComputeConfigError", statusUntil(0, "False", "False"))
		},
	},
	"AnvilServingCertificateExpiringSoon": {
		firing: func(s *store, span time.Duration) {
			certExpiry(s, "webhook", span, 3*24*time.Hour)
			certExpiry(s, "metrics", span, 60*24*time.Hour)
		},
		// cert-manager renews 15 days before expiry.
		healthy: func(s *store, span time.Duration) {
			certExpiry(s, "webhook", span, 15*24*time.Hour)
			certExpiry(s, "metrics", span, 60*24*time.Hour)
		},
	},
	"AnvilReconcileErrors": {
		firing: func(s *store, _ time.Duration) {
			reconciles(s, job, "novacompute", 2, 0.5)
			reconciles(s, job, "controlplane", 1, 0)
		},
		// Routine conflicts at one in twenty passes, and another
		// operator's failing controller under another job.
		healthy: func(s *store, _ time.Duration) {
			reconciles(s, job, "novacompute", 2, 0.05)
			reconciles(s, "other-operator-metrics", "widget", 1, 1)
		},
	},
}
