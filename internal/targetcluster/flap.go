package targetcluster

import "time"

// A compute cluster whose readiness flips wakes every object that names it,
// once per flip. A flapping /readyz would then cost each of them a pass
// every probe interval, so the wake-ups go through a token bucket: the
// first few flips (a cluster that dies and comes back) reach the objects
// at once, later ones at most one per refill period, the last state always.
// The registry's own view (Resolve, the gauges) follows every flip; only
// the wake-ups are spaced.
const (
	// flapBurst is how many readiness changes in a row wake the objects
	// at once.
	flapBurst = 3
	// flapRefill is how long a further wake-up waits once the burst is
	// spent.
	flapRefill = 30 * time.Second
)

// flapGate decides, probe by probe, whether a cluster's dependents are
// woken. It is used by one probe loop and needs no lock.
type flapGate struct {
	burst  float64
	refill time.Duration
	tokens float64
	at     time.Time
	// pending is set while a change has not reached the dependents yet.
	pending bool
}

func newFlapGate(burst int, refill time.Duration) *flapGate {
	return &flapGate{burst: float64(burst), refill: refill, tokens: float64(burst)}
}

// Observe takes one probe's outcome, whether readiness changed, and tells
// whether to wake the dependents now. A change that finds the bucket empty
// is held and goes out on a later probe, once a token has come back.
func (g *flapGate) Observe(now time.Time, changed bool) bool {
	if !g.at.IsZero() && g.refill > 0 {
		g.tokens = min(g.burst, g.tokens+float64(now.Sub(g.at))/float64(g.refill))
	}
	g.at = now
	g.pending = g.pending || changed
	if !g.pending || g.tokens < 1 {
		return false
	}
	g.tokens--
	g.pending = false
	return true
}
