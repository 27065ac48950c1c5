package novacompute

import (
	"context"
	"sync"
	"time"

	"github.com/anvil/anvil/internal/openstack"
)

// listingShare lets the pool passes that run at once share one listing of
// what a Nova holds: every compute service, or every hypervisor. Each pool
// pass needs the whole list, and in a big cloud one listing is the longest
// part of the pass, so without sharing the pools of one Nova ask it the
// same question side by side.
//
// A pass takes only a listing that started at or after the pass did. It
// therefore sees no older Nova than a listing of its own would have shown,
// and every decision the pool takes on it stays as safe as before.
// A listing older than the pass is never used, however recent: a node whose
// service registered just before the pass began must be seen by it.
type listingShare[T any] struct {
	mu     sync.Mutex
	latest map[string]*listing[T]
}

// listing is one listing, in flight until done is closed.
type listing[T any] struct {
	started time.Time
	done    chan struct{}
	items   []T
	err     error
}

// get returns the items of key's latest listing if it started at or after
// since, waiting while it runs, and otherwise lists with fetch and offers
// the result to the passes that come after. The caller must not change
// the items: other passes read the same slice. A failed listing is shared
// like a good one; each pass that took it reports the failure and is
// retried.
func (s *listingShare[T]) get(ctx context.Context, key string, since time.Time, fetch func(context.Context) ([]T, error)) ([]T, error) {
	s.mu.Lock()
	l := s.latest[key]
	if l == nil || l.started.Before(since) {
		l = &listing[T]{started: time.Now(), done: make(chan struct{})}
		if s.latest == nil {
			s.latest = map[string]*listing[T]{}
		}
		s.latest[key] = l
		s.mu.Unlock()
		l.items, l.err = fetch(ctx)
		close(l.done)
		return l.items, l.err
	}
	s.mu.Unlock()
	select {
	case <-l.done:
		return l.items, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// novaListings are the listings the pools of one process share.
type novaListings struct {
	services    listingShare[openstack.ComputeService]
	hypervisors listingShare[openstack.Hypervisor]
}

// listingKey names what a listing was asked of and as whom: the Nova, and
// the service user its pools authenticate as, since pools on other
// clusters may log in as other users. It carries no secret.
func (p *pass) listingKey() string {
	c := p.creds
	return p.nova.Namespace + "/" + p.nova.Name + "\x00" + c.AuthURL + "\x00" + c.Region + "\x00" + c.Interface + "\x00" +
		c.UserDomainName + "\x00" + c.Username + "\x00" + c.ProjectDomainName + "\x00" + c.ProjectName
}
