package openstacktest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// StartCompute runs a nova-compute process for host with Nova's fake
// virt driver, as a real hypervisor would run it, and waits until its
// service is up. The process is stopped when the test ends; the service
// record stays for the test to delete.
func (c *Cloud) StartCompute(tb testing.TB, host string) {
	tb.Helper()
	dir := tb.TempDir()
	extra := filepath.Join(dir, "compute.conf")
	conf := fmt.Sprintf("[DEFAULT]\nhost = %s\ncompute_driver = fake.FakeDriver\nstate_path = %s\ninstances_path = %s\n\n[oslo_concurrency]\nlock_path = %s\n",
		host, dir, filepath.Join(dir, "instances"), filepath.Join(dir, "locks"))
	if err := os.WriteFile(extra, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "nova-compute.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-c", "import sys; from nova.cmd.compute import main; sys.argv[0] = 'nova-compute'; main()",
		"--config-file", c.Endpoints["ANVIL_OPENSTACK_NOVA_CONF"], "--config-file", extra)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			_ = logFile.Close()
		})
	}
	c.mu.Lock()
	if c.computes == nil {
		c.computes = map[string]func(){}
	}
	c.computes[host] = stop
	c.mu.Unlock()
	tb.Cleanup(stop)

	s, err := c.Session(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(tb.Context(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("nova-compute for %s exited; see %s", host, logFile.Name())
		default:
		}
		svcs, err := s.ListComputeServices(ctx, host)
		if err != nil {
			return false, nil //nolint:nilerr // the API may be busy; poll again
		}
		return len(svcs) == 1 && svcs[0].State == "up", nil
	})
	if err != nil {
		tb.Fatalf("nova-compute for %s did not come up: %v", host, err)
	}
}

// StopCompute stops the nova-compute process of host, as a node going away
// would; its service record stays.
func (c *Cloud) StopCompute(tb testing.TB, host string) {
	tb.Helper()
	c.mu.Lock()
	stop := c.computes[host]
	c.mu.Unlock()
	if stop == nil {
		tb.Fatalf("no nova-compute runs for %s", host)
	}
	stop()
}

// DiscoverHosts maps new compute hosts into their cell with the real
// `nova-manage cell_v2 discover_hosts`. Until a host is mapped, the API
// does not list its hypervisor.
func (c *Cloud) DiscoverHosts(tb testing.TB) {
	tb.Helper()
	unlock := c.discoveryLock(tb)
	defer unlock()
	cmd := exec.CommandContext(tb.Context(), "/usr/bin/nova-manage", "--config-file", c.Endpoints["ANVIL_OPENSTACK_NOVA_CONF"], "cell_v2", "discover_hosts")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("nova-manage cell_v2 discover_hosts: %v\n%s", err, tail(string(out), 20))
	}
}

// HoldDiscovery keeps every other test process from running
// DiscoverHosts until the returned function is called. discover_hosts maps
// every unmapped host, so a test that must see its own discovery map its
// hosts holds it meanwhile.
func (c *Cloud) HoldDiscovery(tb testing.TB) func() {
	tb.Helper()
	return c.discoveryLock(tb)
}

// discoveryLock takes the state directory's discovery lock.
func (c *Cloud) discoveryLock(tb testing.TB) func() {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(c.local.Dir, "test-discovery.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		tb.Fatal(err)
	}
	var once sync.Once
	unlock := func() {
		once.Do(func() {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			_ = f.Close()
		})
	}
	tb.Cleanup(unlock)
	return unlock
}
