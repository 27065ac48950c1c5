package novacompute

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TraitsWaitRequeue is how soon a pool that waits for the hypervisor
// operator looks again. The operator applies a list within seconds of its
// write, and nothing tells the pool when it has (the pool does not watch
// Hypervisors, whose CRD a cluster may lack), so the pool polls at
// registrationPoll for registrationWindow after it last wrote a list, and
// then at the slow pace: an operator that is not there is not polled hard.
// A zero lastWrite, a write this process does not know of, is long past.
func TraitsWaitRequeue(lastWrite, now time.Time) time.Duration {
	if !lastWrite.IsZero() && now.Sub(lastWrite) < registrationWindow {
		return registrationPoll
	}
	return nodeWaitRequeue
}

// traitWrites remembers when this process last wrote each pool's
// Hypervisor lists. It is lost with the process; a restarted operator then
// polls at the slow pace, which is still correct.
type traitWrites struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

// wrote records a write for pool at now, and forgets writes too old to
// matter, so the map holds only pools written within the window.
func (w *traitWrites) wrote(pool types.UID, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[types.UID]time.Time{}
	}
	for uid, t := range w.last {
		if now.Sub(t) >= registrationWindow {
			delete(w.last, uid)
		}
	}
	w.last[pool] = now
}

// at returns pool's last write, or the zero time.
func (w *traitWrites) at(pool types.UID) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[pool]
}
