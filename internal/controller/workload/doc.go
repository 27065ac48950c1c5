// Package workload holds the small pieces the kinds' workloads share: parts
// of a pod template (a variable from the downward API, the scripts volume,
// one pull policy on every container), whether a DaemonSet has rolled out
// or a Job has ended, and how a failed write of a child is reported. It
// knows no kind: each controller passes in what its own spec resolved, so
// that no package of one kind imports another's.
package workload
