package openstacktest

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/agents"
)

// Keys of endpoints.env that name the OVN central Neutron uses: the set's
// own, or the one `openstack.sh start-neutron` pointed it at. TLSDir holds
// a client certificate as tls.crt, tls.key and ca.crt.
const (
	neutronOVNNB     = "ANVIL_OPENSTACK_NEUTRON_OVN_NB"
	neutronOVNSB     = "ANVIL_OPENSTACK_NEUTRON_OVN_SB"
	neutronOVNTLSDir = "ANVIL_OPENSTACK_NEUTRON_OVN_TLS_DIR"
)

// Chassis is an OVN chassis made of Debian's programs in a temporary
// directory: an OVS database, ovs-vswitchd on the dummy datapath and
// ovn-controller, registered in the Southbound database Neutron uses under
// a host name. Neutron then lists an alive "OVN Controller agent" for that
// host and binds ports to it (binding:vif_type ovs), which is what a
// nova-compute host needs to boot servers with ports. The dummy datapath
// needs neither the openvswitch kernel module, which this kernel lacks, nor
// privileges; it moves no packets.
type Chassis struct {
	// Host is the chassis's system-id and hostname, the name Neutron binds
	// ports to.
	Host string
	dir  string
	env  []string
}

// ovnTarget returns the OVN central Neutron uses and its client TLS.
func (c *Cloud) ovnTarget(tb testing.TB) (nb, sb string, tls []string) {
	tb.Helper()
	nb, sb, dir := c.Endpoints[neutronOVNNB], c.Endpoints[neutronOVNSB], c.Endpoints[neutronOVNTLSDir]
	if nb == "" || sb == "" || dir == "" {
		tb.Fatal("endpoints.env names no OVN central for Neutron; start the set with the current hack/openstack/openstack.sh")
	}
	return nb, sb, []string{
		"--private-key=" + filepath.Join(dir, "tls.key"),
		"--certificate=" + filepath.Join(dir, "tls.crt"),
		"--ca-cert=" + filepath.Join(dir, "ca.crt"),
	}
}

// NeutronOVN returns the OVN central Neutron uses: its Northbound and
// Southbound addresses and the directory of a client certificate the
// central accepts, as tls.crt, tls.key and ca.crt, for a chassis a test
// runs through the pod runner.
func (c *Cloud) NeutronOVN(tb testing.TB) (nb, sb, tlsDir string) {
	tb.Helper()
	nb, sb, _ = c.ovnTarget(tb)
	return nb, sb, c.Endpoints[neutronOVNTLSDir]
}

// DeleteAgentsAtEnd deletes Neutron's agents on host when the test ends,
// which removes their Chassis and Chassis_Private records too. Register it
// before whatever runs the chassis, so that it runs after the chassis has
// stopped: a live ovn-controller would register again.
func (c *Cloud) DeleteAgentsAtEnd(tb testing.TB, host string) {
	tb.Cleanup(func() { c.deleteAgents(tb, host) })
}

// OVNNorthbound runs ovn-nbctl with args against the Northbound database
// Neutron uses and returns its output. Tests only read it: Neutron's
// maintenance task would flag, and its start would remove, objects it did
// not make.
func (c *Cloud) OVNNorthbound(tb testing.TB, args ...string) string {
	tb.Helper()
	nb, _, tls := c.ovnTarget(tb)
	return runTool(tb, nil, "ovn-nbctl", append(append([]string{"--db=" + nb, "--timeout=20"}, tls...), args...)...)
}

// StartChassis starts a chassis for host and waits until ovn-controller is
// connected to the Southbound database. When the test ends it stops the
// chassis and deletes its agent from Neutron, which removes its Chassis
// record too.
func (c *Cloud) StartChassis(tb testing.TB, host string) *Chassis {
	tb.Helper()
	_, sb, tls := c.ovnTarget(tb)
	dir := tb.TempDir()
	ch := &Chassis{Host: host, dir: dir, env: os.Environ()}
	// The programs put what they are not told about here, never into the
	// host's /var/run/openvswitch.
	for _, v := range []string{"OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR", "OVN_RUNDIR", "OVN_LOGDIR", "OVN_DBDIR", "OVN_SYSCONFDIR"} {
		ch.env = append(ch.env, v+"="+dir)
	}
	// Runs after the processes stopped and before the directory goes.
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, name := range []string{"ovn-controller", "ovs-vswitchd", "ovsdb-server"} {
				if raw, err := os.ReadFile(filepath.Join(dir, name+".log")); err == nil {
					tb.Logf("chassis %s, last lines of %s.log:\n%s", host, name, tail(string(raw), 20))
				}
			}
		}
	})

	// Runs after the processes stopped. A Chassis that goes away stays in
	// Neutron's agent list, dead, until the agent is deleted through the API
	// (Zed's ML2/OVN drops it from its cache only then), and a killed
	// ovn-controller leaves its Chassis too; the delete removes both.
	tb.Cleanup(func() { c.deleteAgents(tb, host) })

	db := filepath.Join(dir, "conf.db")
	runTool(tb, ch.env, "ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema")
	ch.start(tb, "ovsdb-server", db, "--remote=punix:"+ch.sock(), "--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"))
	ch.waitFor(tb, "the OVS database", 15*time.Second, func() bool {
		return ch.command("ovs-vsctl", "--db=unix:"+ch.sock(), "--timeout=2", "--no-wait", "init").Run() == nil
	})
	// The member list is a comma list, which ovs-vsctl takes only quoted.
	ch.VSCtl(tb, "--no-wait", "set", "Open_vSwitch", ".",
		"external_ids:system-id="+host, "external_ids:hostname="+host,
		`external_ids:ovn-remote="`+sb+`"`, "external_ids:ovn-remote-probe-interval=60000",
		"external_ids:ovn-encap-type=geneve", "external_ids:ovn-encap-ip=127.0.0.1",
		"external_ids:ovn-bridge=br-int", "external_ids:ovn-bridge-datapath-type=dummy")
	// Without vswitchd ovn-controller registers the chassis, but its agent
	// stays dead in Neutron and binding fails.
	ch.start(tb, "ovs-vswitchd", "--enable-dummy=override", "--disable-system", "--disable-system-route",
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "unix:"+ch.sock())
	// ovn-controller 23.03 has no --unixctl: ovn-appctl finds its socket
	// through the pid file in OVN_RUNDIR.
	ch.start(tb, "ovn-controller", append(append([]string{"--pidfile"}, tls...), "unix:"+ch.sock())...)
	ch.waitFor(tb, "ovn-controller to connect to "+sb, time.Minute, func() bool {
		out, err := ch.command("ovn-appctl", "--timeout=2", "-t", "ovn-controller", "connection-status").Output()
		return err == nil && strings.TrimSpace(string(out)) == "connected"
	})
	ch.waitFor(tb, "ovn-controller to create br-int", 30*time.Second, func() bool {
		return ch.command("ovs-vsctl", "--db=unix:"+ch.sock(), "--timeout=2", "br-exists", "br-int").Run() == nil
	})
	return ch
}

// deleteAgents deletes Neutron's agents on host.
func (c *Cloud) deleteAgents(tb testing.TB, host string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := c.NetworkClient(ctx)
	if err != nil {
		tb.Logf("cleanup of the agents on %s: %v", host, err)
		return
	}
	all, err := NetworkAgents(ctx, nc, host)
	if err != nil {
		tb.Logf("cleanup of the agents on %s: %v", host, err)
		return
	}
	for _, a := range all {
		if err := agents.Delete(ctx, nc, a.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			tb.Logf("cleanup of agent %s on %s: %v", a.ID, host, statusOnly(err))
		}
	}
}

// Plug adds an interface for a Neutron port to br-int, as a hypervisor does
// for a VM's NIC. OVN then marks the port up, and Neutron makes it ACTIVE.
func (ch *Chassis) Plug(tb testing.TB, portID string) {
	tb.Helper()
	name := "tap" + portID[:min(11, len(portID))] // interface names have at most 15 characters
	ch.VSCtl(tb, "--timeout=20", "add-port", "br-int", name, "--",
		"set", "Interface", name, "external_ids:iface-id="+portID)
}

// VSCtl runs ovs-vsctl against the chassis's OVS database.
func (ch *Chassis) VSCtl(tb testing.TB, args ...string) string {
	tb.Helper()
	return runTool(tb, ch.env, "ovs-vsctl", append([]string{"--db=unix:" + ch.sock()}, args...)...)
}

func (ch *Chassis) sock() string { return filepath.Join(ch.dir, "db.sock") }

func (ch *Chassis) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = ch.env
	return cmd
}

// start runs a program of the chassis in its own process group, with its
// console log in the directory, and stops it when the test ends.
// ovn-controller is asked to exit, which deletes its Chassis record before
// it goes; a killed one would leave the record behind.
func (ch *Chassis) start(tb testing.TB, name string, args ...string) {
	tb.Helper()
	logf, err := os.OpenFile(filepath.Join(ch.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := ch.command(name, append(args, "-vconsole:info", "-vsyslog:off")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		tb.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	tb.Cleanup(func() {
		if name == "ovn-controller" {
			_ = ch.command("ovn-appctl", "--timeout=10", "-t", "ovn-controller", "exit").Run()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
			}
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

func (ch *Chassis) waitFor(tb testing.TB, what string, timeout time.Duration, ok func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			tb.Fatalf("chassis %s: waited %s for %s", ch.Host, timeout, what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// runTool runs one of the OVS or OVN command-line tools and returns its
// output; a failure fails the test with that output, which holds no secret.
func runTool(tb testing.TB, env []string, name string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
