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

var groups = struct {
	sync.Mutex
	live map[int]struct{}
}{live: map[int]struct{}{}}

// Add records the process group pgid, which a process started with
// Setpgid leads under its own PID.
func Add(pgid int) {
	groups.Lock()
	defer groups.Unlock()
	groups.live[pgid] = struct{}{}
}

// Done forgets pgid once its leader has ended and its group was killed.
func Done(pgid int) {
	groups.Lock()
	defer groups.Unlock()
	delete(groups.live, pgid)
}

// Live reports whether pgid is recorded.
func Live(pgid int) bool {
	groups.Lock()
	defer groups.Unlock()
	_, ok := groups.live[pgid]
	return ok
}

// KillAll sends SIGKILL to every recorded process group and waits, up to
// ten seconds, until no member of any is left, so that a caller may remove
// the directories they wrote into.
func KillAll() {
	groups.Lock()
	pgids := make([]int, 0, len(groups.live))
	for pgid := range groups.live {
		pgids = append(pgids, pgid)
	}
	groups.Unlock()
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
