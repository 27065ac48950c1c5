package openstacktest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// Every Nova a test declares with live pools keeps the one aggregate of
// that name in the cloud, tenant_filter_tests, marked as its own, and a
// second Nova rightly refuses an aggregate marked by the first. So only one
// test at a time, across every test process sharing the set, may run such
// a Nova.
const tenantFilterLockName = "test-tenant-filter-tests.lock"

// tenantFilterHold is this process's share of the lock: the tests of one
// package run one after another, and a test may take it through several
// helpers.
var tenantFilterHold struct {
	mu    sync.Mutex
	count int
	file  *os.File
}

// leftoverWait bounds how long a release waits for the operator to reap
// the aggregate itself before the release deletes it.
const leftoverWait = 90 * time.Second

// ReserveTenantFilterTests keeps every other test process from running a
// Nova with live pools on this set, from the call of take until tb ends.
// It registers the release now: a test reserves before it starts an
// operator, so that the release, which runs last, finds the operator
// stopped or the test's pools deleted. Only pools reach the aggregate, so
// the test declares its ControlPlane or Nova first and calls take just
// before its first pool: the Nova's database Jobs and pods come up while
// another test still holds the aggregate. On release, an aggregate the
// test's pools left is deleted, so that one failed test does not fail the
// next one elsewhere.
func (c *Cloud) ReserveTenantFilterTests(tb testing.TB) (take func()) {
	tb.Helper()
	held := false
	tb.Cleanup(func() {
		if held {
			c.releaseTenantFilterTests(tb)
		}
	})
	return func() {
		if !held {
			c.acquireTenantFilterTests(tb)
			held = true
		}
	}
}

// acquireTenantFilterTests adds one share, locking the file for the first.
func (c *Cloud) acquireTenantFilterTests(tb testing.TB) {
	tb.Helper()
	h := &tenantFilterHold
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 {
		f, err := os.OpenFile(filepath.Join(c.local.Dir, tenantFilterLockName), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			tb.Fatal(err)
		}
		start := time.Now()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			tb.Fatal(err)
		}
		if waited := time.Since(start); waited > time.Second {
			tb.Logf("waited %s for another test process's Nova to leave %s", waited.Round(time.Second), novav1alpha1.TenantFilterTestsAggregate)
		}
		h.file = f
	}
	h.count++
}

// releaseTenantFilterTests drops one share; the last one removes a leftover
// aggregate and unlocks.
func (c *Cloud) releaseTenantFilterTests(tb testing.TB) {
	h := &tenantFilterHold
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count--
	if h.count > 0 {
		return
	}
	c.removeLeftoverTenantFilterTests(tb)
	_ = syscall.Flock(int(h.file.Fd()), syscall.LOCK_UN)
	_ = h.file.Close()
	h.file = nil
}

// removeLeftoverTenantFilterTests gives a pool deleted at the end of the
// test time to reap the aggregate, then deletes what is still there.
func (c *Cloud) removeLeftoverTenantFilterTests(tb testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), leftoverWait+30*time.Second)
	defer cancel()
	s, err := c.Session(ctx)
	if err != nil {
		tb.Logf("checking for a leftover %s: %v", novav1alpha1.TenantFilterTestsAggregate, err)
		return
	}
	deadline := time.Now().Add(leftoverWait)
	for {
		a, found, err := findAggregate(ctx, s, novav1alpha1.TenantFilterTestsAggregate)
		if err != nil {
			tb.Logf("checking for a leftover %s: %v", novav1alpha1.TenantFilterTestsAggregate, err)
			return
		}
		if !found {
			return
		}
		if time.Now().After(deadline) {
			tb.Logf("deleting %s, which the test's pools left marked %v", a.Name, a.Metadata)
			for _, h := range a.Hosts {
				_ = s.RemoveAggregateHost(ctx, a.ID, h)
			}
			if err := s.DeleteAggregate(ctx, a.ID); err != nil && !openstack.IsNotFound(err) {
				tb.Logf("deleting the leftover %s: %v", a.Name, err)
			}
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// findAggregate returns the aggregate named name, if there is one.
func findAggregate(ctx context.Context, s *openstack.Session, name string) (openstack.Aggregate, bool, error) {
	all, err := s.ListAggregates(ctx)
	if err != nil {
		return openstack.Aggregate{}, false, err
	}
	for _, a := range all {
		if a.Name == name {
			return a, true, nil
		}
	}
	return openstack.Aggregate{}, false, nil
}
