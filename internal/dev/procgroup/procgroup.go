// Package procgroup remembers the process groups a test binary started, so
// that the binary can end all of them, and whatever they forked, before it
// exits.
//
// Pdeathsig ends only a starter's direct child when the starter goes. A
// service that forks workers (nova-conductor, for one) would leave them
// running under init, holding ports and database connections that the
// next package or the devstack then meets.
package procgroup

import (
	"sync"
	"syscall"
	"time"
)

// Set is a set of live process groups. Once shut down it takes no new
// group: a pod runner that restarts a container the shutdown just killed
// would otherwise start it again, after the check, in a directory that is
// about to be removed.
type Set struct {
	mu     sync.Mutex
	live   map[int]struct{}
	closed bool
}

// std is the test binary's set, which the package functions use.
var std Set

// Add records the process group pgid, which a process started with
// Setpgid leads under its own PID. It reports false, and records nothing,
// once the set is shut down; the caller must then end the group itself.
func (s *Set) Add(pgid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.live == nil {
		s.live = map[int]struct{}{}
	}
	s.live[pgid] = struct{}{}
	return true
}

// Done forgets pgid once its leader has ended and its group was killed.
func (s *Set) Done(pgid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, pgid)
}

// Live reports whether pgid is recorded.
func (s *Set) Live(pgid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[pgid]
	return ok
}

// Closed reports whether the set was shut down, so that a starter can
// refuse before it prepares anything on disk.
func (s *Set) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// KillAll sends SIGKILL to every recorded process group and waits, up to
// ten seconds, until no member of any is left, so that a caller may remove
// the directories they wrote into. The set still takes new groups.
func (s *Set) KillAll() {
	s.mu.Lock()
	pgids := make([]int, 0, len(s.live))
	for pgid := range s.live {
		pgids = append(pgids, pgid)
	}
	s.mu.Unlock()
	for _, pgid := range pgids {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pgid := range pgids {
		// A group is gone when no process, not even a zombie its starter
		// has yet to collect, carries its ID.
		for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Shutdown closes the set to new groups, then kills the recorded ones as
// KillAll does. A test binary calls it once, after its tests.
func (s *Set) Shutdown() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.KillAll()
}

// Add records pgid in the test binary's set; see Set.Add.
func Add(pgid int) bool { return std.Add(pgid) }

// Done forgets pgid in the test binary's set.
func Done(pgid int) { std.Done(pgid) }

// Live reports whether pgid is recorded in the test binary's set.
func Live(pgid int) bool { return std.Live(pgid) }

// Closed reports whether the test binary's set was shut down.
func Closed() bool { return std.Closed() }

// KillAll kills the test binary's recorded groups; see Set.KillAll.
func KillAll() { std.KillAll() }

// Shutdown closes the test binary's set and kills its groups; see
// Set.Shutdown.
func Shutdown() { std.Shutdown() }
