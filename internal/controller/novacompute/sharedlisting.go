package novacompute

import (
	"context"
	"sync"
	"time"

	"github.com/anvil/anvil/internal/openstack"
)

// listingShare lets the pool passes that run at once share one reading of
// what a Nova holds: every compute service, every hypervisor, or the cell
// database's failed_builds counters. Each pool pass needs the whole
// answer, and in a big cloud one reading is the longest part of the pass,
// so without sharing the pools of one Nova ask it the same question side
// by side.
//
// A pass takes only a reading that started at or after the pass did. It
// therefore sees no older Nova than a reading of its own would have shown,
// and every decision the pool takes on it stays as safe as before.
// A reading older than the pass is never used, however recent: a node
// whose service registered just before the pass began must be seen by it.
type listingShare[T any] struct {
	mu     sync.Mutex
	latest map[string]*listing[T]
}

// listing is one reading, in flight until done is closed.
type listing[T any] struct {
	started time.Time
	done    chan struct{}
	value   T
	err     error
}

// get returns the value of key's latest reading if it started at or after
// since, waiting while it runs, and otherwise reads with fetch and offers
// the result to the passes that come after. The caller must not change
// the value: other passes read the same one. A failed reading is shared
// like a good one; each pass that took it reports the failure and is
// retried.
func (s *listingShare[T]) get(ctx context.Context, key string, since time.Time, fetch func(context.Context) (T, error)) (T, error) {
	s.mu.Lock()
	l := s.latest[key]
	if l == nil || l.started.Before(since) {
		l = &listing[T]{started: time.Now(), done: make(chan struct{})}
		if s.latest == nil {
			s.latest = map[string]*listing[T]{}
		}
		s.latest[key] = l
		s.mu.Unlock()
		l.value, l.err = fetch(ctx)
		close(l.done)
		return l.value, l.err
	}
	s.mu.Unlock()
	select {
	case <-l.done:
		return l.value, l.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// novaListings are the readings the pools of one process share.
type novaListings struct {
	services     listingShare[[]openstack.ComputeService]
	hypervisors  listingShare[[]openstack.Hypervisor]
	failedBuilds listingShare[map[string]int32]
}

// listingKey names what a listing was asked of and as whom: the Nova, and
// the service user its pools authenticate as, since pools on other
// clusters may log in as other users. It carries no secret.
func (p *pass) listingKey() string {
	c := p.creds
	return p.nova.Namespace + "/" + p.nova.Name + "\x00" + c.AuthURL + "\x00" + c.Region + "\x00" + c.Interface + "\x00" +
		c.UserDomainName + "\x00" + c.Username + "\x00" + c.ProjectDomainName + "\x00" + c.ProjectName
}
