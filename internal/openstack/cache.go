package openstack

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

const (
	// renewMargin is how long before its token expires a cached session is
	// replaced, so that no pass starts with a token about to lapse.
	renewMargin = 5 * time.Minute
	// unknownExpiryLifetime is how long a session is kept when its token
	// states no expiry.
	unknownExpiryLifetime = 10 * time.Minute
	// idleEviction drops a session no pass asked for in this long: its
	// credentials were rotated, or its object deleted.
	idleEviction = 30 * time.Minute
)

// SessionCache keeps authenticated sessions across reconcile passes, keyed
// by everything in their Credentials, so that a settled operator does not
// ask Keystone for a token on every pass. Rotated credentials make a new
// key, so a pass never uses a session of an old password; a session is
// renewed before its token nears expiry. It is safe for concurrent use.
type SessionCache struct {
	mu      sync.Mutex
	entries map[cacheKey]*cachedSession
	// now is the clock; the zero value means time.Now.
	now func() time.Time
	// open authenticates; nil means openSession.
	open func(ctx context.Context, identityOnly bool, c Credentials) (*Session, time.Time, error)
}

// cacheKey is a digest of a session's kind and credentials: the password
// itself is never a map key another goroutine could print.
type cacheKey [sha256.Size]byte

type cachedSession struct {
	session *Session
	renewAt time.Time
	usedAt  time.Time
}

// NewSessionCache returns an empty cache.
func NewSessionCache() *SessionCache {
	return &SessionCache{entries: map[cacheKey]*cachedSession{}}
}

// Session returns a session with the identity, compute and placement
// endpoints for c, authenticating only when no fresh one is cached.
func (sc *SessionCache) Session(ctx context.Context, c Credentials) (*Session, error) {
	return sc.get(ctx, false, c)
}

// IdentitySession is Session for NewIdentitySession's kind: Keystone at the
// auth URL itself, without the catalog.
func (sc *SessionCache) IdentitySession(ctx context.Context, c Credentials) (*Session, error) {
	return sc.get(ctx, true, c)
}

func (sc *SessionCache) get(ctx context.Context, identityOnly bool, c Credentials) (*Session, error) {
	key := keyOf(identityOnly, c)
	now := sc.clock()
	sc.mu.Lock()
	if e, ok := sc.entries[key]; ok && now.Before(e.renewAt) {
		e.usedAt = now
		sc.mu.Unlock()
		return e.session, nil
	}
	sc.mu.Unlock()

	open := sc.open
	if open == nil {
		open = openSession
	}
	s, expires, err := open(ctx, identityOnly, c)
	if err != nil {
		return nil, err
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for k, e := range sc.entries {
		if now.Sub(e.usedAt) > idleEviction {
			delete(sc.entries, k)
		}
	}
	sc.entries[key] = &cachedSession{session: s, renewAt: RenewAt(now, expires), usedAt: now}
	return s, nil
}

// Len is the number of cached sessions.
func (sc *SessionCache) Len() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.entries)
}

func (sc *SessionCache) clock() time.Time {
	if sc.now != nil {
		return sc.now()
	}
	return time.Now()
}

// RenewAt is when a session authenticated at issued, whose token expires
// at expires (zero when unknown), is replaced: renewMargin before expiry,
// but never later than three quarters into a short token's life. It is
// pure, so the rule is table-tested.
func RenewAt(issued, expires time.Time) time.Time {
	if expires.IsZero() || !expires.After(issued) {
		return issued.Add(unknownExpiryLifetime)
	}
	life := expires.Sub(issued)
	margin := max(renewMargin, life/4)
	if margin >= life {
		return issued
	}
	return expires.Add(-margin)
}

// keyOf digests every field of c with the session kind; a zero byte
// separates fields, which cannot hold one in a form Keystone accepts.
func keyOf(identityOnly bool, c Credentials) cacheKey {
	h := sha256.New()
	kind := "session"
	if identityOnly {
		kind = "identity"
	}
	for _, f := range []string{kind, c.AuthURL, c.Username, c.Password, c.ProjectName, c.UserDomainName,
		c.ProjectDomainName, c.Region, c.Interface, string(c.CABundle)} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	var k cacheKey
	copy(k[:], h.Sum(nil))
	return k
}

// openSession authenticates a new session and reads its token's expiry.
func openSession(ctx context.Context, identityOnly bool, c Credentials) (*Session, time.Time, error) {
	var s *Session
	var err error
	if identityOnly {
		s, err = NewIdentitySession(ctx, c)
	} else {
		s, err = NewSession(ctx, c)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	return s, tokenExpiry(s.provider), nil
}

// tokenExpiry is when the provider's token expires, or zero when the auth
// result does not say.
func tokenExpiry(p *gophercloud.ProviderClient) time.Time {
	res, ok := p.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return time.Time{}
	}
	tok, err := res.ExtractToken()
	if err != nil || tok == nil {
		return time.Time{}
	}
	return tok.ExpiresAt
}
