package novacompute

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// The pools' metrics. Pool names are labels, and node names only where a
// value belongs to one node and means nothing summed up: the failed-builds
// gauge. Its series are deleted when the node leaves the pool, so they
// follow the live fleet instead of growing with its history.
var (
	onboardingSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "anvil_novacompute_node_onboarding_seconds",
		Help: "Time from a node's nova-compute service registering to its host being mapped into a cell (stage=mapped) and to the host being in its zone aggregate (stage=zone_aggregate).",
		// From seconds (a discovery Job that was already running) to the
		// hypervisor operator's onboarding, which takes minutes.
		Buckets: []float64{5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600},
	}, []string{"namespace", "pool", "stage"})
	timeToSchedulable = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "anvil_novacompute_node_time_to_schedulable_seconds",
		Help: "Time from a node's nova-compute container starting to Placement offering the node as an allocation candidate (VCPU:1) in its zone aggregate, observed once per node when the pool first sees it; see docs/design/time-to-schedulable.md.",
		// Issue #18's target is 10 s; the pool looks at most every pass,
		// so values near its resync are its polling, not the node.
		Buckets: []float64{2.5, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 300, 600},
	}, []string{"namespace", "pool"})
	nodesByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anvil_novacompute_nodes",
		Help: "Nodes of a pool by phase (Pending, Active, Draining, Releasing, Conflict).",
	}, []string{"namespace", "pool", "phase"})
	failedBuilds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "anvil_novacompute_failed_builds",
		Help: "The failed_builds counter of a pool's node, as nova-compute last wrote it to the cell database: builds that failed or were rescheduled there since the last one that succeeded.",
	}, []string{"namespace", "pool", "node"})
	// stepSeconds is per step, not per pool: it answers where a pass
	// spends its time, which the pool name would only split up.
	stepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "anvil_novacompute_pass_step_seconds",
		Help: "Time one step of a NovaCompute pass took (step=Policy, NovaRef, Nodes, PoolConfig, Preflight, DaemonSet, Aggregates, Services, FailedBuilds, Schedulable, Traits, and StatusPatch for the closing status write), whether it succeeded or not.",
		// From a step that only reads the cache to one that waits on a
		// loaded compute apiserver or on OpenStack.
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"step"})
)

func init() {
	metrics.Registry.MustRegister(onboardingSeconds, timeToSchedulable, nodesByPhase, failedBuilds, stepSeconds)
}

// timed wraps a step so that its duration is observed under name.
func timed(name string, run func(context.Context, *pass) (flow.Outcome, error)) func(context.Context, *pass) (flow.Outcome, error) {
	return func(ctx context.Context, p *pass) (flow.Outcome, error) {
		start := time.Now()
		defer func() { stepSeconds.WithLabelValues(name).Observe(time.Since(start).Seconds()) }()
		return run(ctx, p)
	}
}

// observeFailedBuilds sets the failed-builds gauge from the pool's status
// and deletes the series of nodes the pass dropped, or of the whole pool
// once it is gone. The status before the pass tells which series exist: a
// pass whose status patch fails leaves the node in the stored status, so
// the next pass deletes its series.
func observeFailedBuilds(before, pool *novav1alpha1.NovaCompute) {
	if !pool.DeletionTimestamp.IsZero() && len(pool.Finalizers) == 0 {
		failedBuilds.DeletePartialMatch(prometheus.Labels{"namespace": pool.Namespace, "pool": pool.Name})
		return
	}
	now := failedBuildsSeries(pool.Status.Nodes)
	for node := range failedBuildsSeries(before.Status.Nodes) {
		if _, ok := now[node]; !ok {
			failedBuilds.DeleteLabelValues(pool.Namespace, pool.Name, node)
		}
	}
	for node, n := range now {
		failedBuilds.WithLabelValues(pool.Namespace, pool.Name, node).Set(float64(n))
	}
}

// phases are the gauge's label values; each is set on every pass, so a
// phase that empties reads 0.
var phases = []string{novav1alpha1.NodePending, novav1alpha1.NodeActive, novav1alpha1.NodeDraining, novav1alpha1.NodeReleasing, novav1alpha1.NodeConflict}

// observeNodePhases sets the pool's gauge, or removes its series once the
// pool is gone.
func observeNodePhases(pool *novav1alpha1.NovaCompute) {
	if !pool.DeletionTimestamp.IsZero() && len(pool.Finalizers) == 0 {
		for _, ph := range phases {
			nodesByPhase.DeleteLabelValues(pool.Namespace, pool.Name, ph)
		}
		return
	}
	for _, ph := range phases {
		nodesByPhase.WithLabelValues(pool.Namespace, pool.Name, ph).Set(float64(countPhase(pool.Status.Nodes, ph)))
	}
}

// seenCapacity bounds what the tracker remembers. Its keys name nodes,
// services and aggregates, which churn over a fleet's life; past the bound
// the oldest are forgotten, and a forgotten state that lasts is observed,
// or reported, once more.
const seenCapacity = 4096

// onboardingTracker observes each node's onboarding stages once per
// operator process, and keeps a lasting state from being reported on every
// pass. A restart may observe a stage again; the histogram is a trend, not
// a ledger.
type onboardingTracker struct {
	init  sync.Once
	mu    sync.Mutex
	seen  *lru.Cache
	since time.Time
}

// started returns when the tracker was first used, which stands for the
// operator process's start: now, on the first call.
func (t *onboardingTracker) started(now time.Time) time.Time {
	t.init.Do(func() { t.seen, t.since = lru.New(seenCapacity), now })
	return t.since
}

// once tells whether key is new, and remembers it. Passes of several
// pools call it at once; mu makes the look and the note one step.
func (t *onboardingTracker) once(key string) bool {
	t.init.Do(func() { t.seen, t.since = lru.New(seenCapacity), time.Now() })
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen.Get(key); ok {
		return false
	}
	t.seen.Add(key, struct{}{})
	return true
}

// mapped observes the time from registration to the host's mapping.
func (t *onboardingTracker) mapped(pool *novav1alpha1.NovaCompute, n novav1alpha1.NovaComputeNode, now time.Time) {
	t.observe(pool, n, now, "mapped")
}

// inZoneAggregate observes the time from registration to the host being in
// its zone aggregate.
func (t *onboardingTracker) inZoneAggregate(pool *novav1alpha1.NovaCompute, n novav1alpha1.NovaComputeNode, now time.Time) {
	t.observe(pool, n, now, "zone_aggregate")
}

func (t *onboardingTracker) observe(pool *novav1alpha1.NovaCompute, n novav1alpha1.NovaComputeNode, now time.Time, stage string) {
	if n.ServiceRegisteredAt == nil {
		return
	}
	key := types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}.String() + "/" + n.Name + "/" + n.ServiceID + "/" + stage
	if !t.once(key) {
		return
	}
	onboardingSeconds.WithLabelValues(pool.Namespace, pool.Name, stage).Observe(now.Sub(n.ServiceRegisteredAt.Time).Seconds())
}

// schedulableKey names a node's service in the tracker: a service
// registered anew is onboarded, and observed, anew.
func schedulableKey(pool *novav1alpha1.NovaCompute, n novav1alpha1.NovaComputeNode) string {
	return types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}.String() + "/" + n.Name + "/" + n.ServiceID + "/schedulable"
}

// schedulableObserved tells whether the node's time to schedulable was
// observed in this process, without remembering anything.
func (t *onboardingTracker) schedulableObserved(pool *novav1alpha1.NovaCompute, n novav1alpha1.NovaComputeNode) bool {
	t.init.Do(func() { t.seen, t.since = lru.New(seenCapacity), time.Now() })
	_, ok := t.seen.Get(schedulableKey(pool, n))
	return ok
}

// schedulable observes the time from start to now, once per node service.
func (t *onboardingTracker) schedulable(pool *novav1alpha1.NovaCompute, n novav1alpha1.NovaComputeNode, start, now time.Time) {
	if !t.once(schedulableKey(pool, n)) {
		return
	}
	timeToSchedulable.WithLabelValues(pool.Namespace, pool.Name).Observe(max(now.Sub(start), 0).Seconds())
}
