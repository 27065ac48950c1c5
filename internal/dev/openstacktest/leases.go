package openstacktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Test packages run in parallel processes (go test -p), and several may use
// one service set. Each holds a lease, a file named after its pid, while it
// runs; the set is stopped by the last package to leave, and only when a
// test started it. A set a developer started carries no marker and is never
// stopped by a test.
const (
	leaseDirName  = "test-leases"
	leaseLockName = "test-leases.lock"
	startedMarker = "started-by-tests"
)

// leases guards the lease directory of one state directory.
type leases struct {
	dir, lockPath, marker string
}

func newLeases(stateDir string) (*leases, error) {
	l := &leases{
		dir:      filepath.Join(stateDir, leaseDirName),
		lockPath: filepath.Join(stateDir, leaseLockName),
		marker:   filepath.Join(stateDir, startedMarker),
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, err
	}
	return l, nil
}

// locked runs f while holding an exclusive lock on the lease directory, so
// that starting, taking a lease and the last package's stop never interleave.
func (l *leases) locked(f func() error) error {
	fd, err := os.OpenFile(l.lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", l.lockPath, err)
	}
	defer func() { _ = syscall.Flock(int(fd.Fd()), syscall.LOCK_UN) }()
	return f()
}

// take records this process's lease; startedHere marks the set as started by
// a test, so that the last lease holder stops it.
func (l *leases) take(startedHere bool) error {
	if startedHere {
		if err := os.WriteFile(l.marker, nil, 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(l.dir, strconv.Itoa(os.Getpid())), nil, 0o600)
}

// release drops this process's lease and any left by processes that died,
// and reports whether the caller should stop the set: no lease is left and a
// test started it.
func (l *leases) release() (bool, error) {
	_ = os.Remove(filepath.Join(l.dir, strconv.Itoa(os.Getpid())))
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return false, err
	}
	live := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && alive(pid) {
			live++
			continue
		}
		_ = os.Remove(filepath.Join(l.dir, e.Name()))
	}
	if live > 0 {
		return false, nil
	}
	if _, err := os.Stat(l.marker); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return true, os.Remove(l.marker)
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
