// Package vmtest plays the hypervisor for a test instance: it gives a
// Neutron port a network namespace of its own that stands for the VM, and
// plugs the VM's NIC into a chassis's br-int the way Nova's OVS VIF driver
// plugs a tap, so that traffic from the "VM" crosses OVN's userspace
// datapath for real. It needs root, a chassis whose ovs-vswitchd runs the
// netdev datapath in a network namespace (the pod runner's Node.NetNS),
// and Debian's iproute2, util-linux, ethtool, openvswitch-switch and curl.
//
// Every namespace and device it makes is its own: the VM's namespace, and
// a veth whose outer end lives in the node's namespace. Nothing touches
// the host's network.
package vmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Programs the helper runs.
const (
	ipPath      = "/usr/sbin/ip"
	nsenterPath = "/usr/bin/nsenter"
	ethtoolPath = "/usr/sbin/ethtool"
	vsctlPath   = "/usr/bin/ovs-vsctl"
	curlPath    = "/usr/bin/curl"
	// MetadataAddress is where an instance reads its metadata.
	MetadataAddress = "169.254.169.254"
	// nicName is the VM's NIC inside its namespace.
	nicName = "eth0"
	// integrationBridge is the bridge ovn-controller manages.
	integrationBridge = "br-int"
	// commandTimeout bounds one setup or cleanup command.
	commandTimeout = 30 * time.Second
)

// Port is the Neutron port the instance's NIC stands for.
type Port struct {
	// ID is the port's id, which OVN knows it by (external_ids:iface-id).
	ID string
	// MAC is the port's MAC address.
	MAC string
	// IP is the port's fixed IPv4 address.
	IP string
	// CIDR is the subnet's CIDR, for the address's prefix length.
	CIDR string
	// MetadataIP is the address of the network's metadata port (device
	// owner network:distributed); the route to 169.254.169.254 goes
	// through it, as cloud-init's does on a network without a router.
	MetadataIP string
	// Gateway, if set, becomes the default route.
	Gateway string
}

// Host is the hypervisor side: the node's network namespace, where its
// ovs-vswitchd runs, and its OVS database socket.
type Host struct {
	// NetNS is the name of the node's namespace in /run/netns.
	NetNS string
	// OVSDBSocket is the path of the node's OVS database socket.
	OVSDBSocket string
}

// Instance is a plugged test instance.
type Instance struct {
	// NetNS is the name of the VM's namespace in /run/netns.
	NetNS string
	// Device is the outer end of the NIC's veth, a port of br-int.
	Device string
	host   Host
}

// Names returns the VM namespace's and the outer device's names for a
// port: short hashes of its id, since a device name has at most 15
// characters and a port's id is 36.
func Names(portID string) (netns, device string) {
	sum := sha256.Sum256([]byte(portID))
	h := hex.EncodeToString(sum[:])[:8]
	return "anvil-vm-" + h, "anvm" + h + "o"
}

// PlugCommands returns the commands that plug the instance, in order: the
// VM's namespace, the veth from the node's namespace into it, the port in
// br-int, the NIC's MAC, address and routes, and checksum offload off.
// The userspace datapath does not complete checksums a veth leaves
// partial, so the VM's TCP segments would arrive invalid and conntrack
// would drop them.
func PlugCommands(host Host, port Port) ([][]string, error) {
	if host.NetNS == "" || host.OVSDBSocket == "" {
		return nil, errors.New("the host needs a network namespace and an OVS database socket")
	}
	if port.ID == "" || port.MAC == "" {
		return nil, errors.New("the port needs an id and a MAC address")
	}
	if _, err := net.ParseMAC(port.MAC); err != nil {
		return nil, fmt.Errorf("port %s: %w", port.ID, err)
	}
	ip := net.ParseIP(port.IP)
	_, subnet, err := net.ParseCIDR(port.CIDR)
	if ip == nil || ip.To4() == nil || err != nil || !subnet.Contains(ip) {
		return nil, fmt.Errorf("port %s: %q is not an IPv4 address in %q", port.ID, port.IP, port.CIDR)
	}
	ones, _ := subnet.Mask.Size()
	vm, dev := Names(port.ID)
	cmds := [][]string{
		{ipPath, "netns", "add", vm},
		{ipPath, "-n", vm, "link", "set", "lo", "up"},
		// Made in the node's namespace, the peer straight in the VM's:
		// no end of it ever sits in the host's.
		{ipPath, "-n", host.NetNS, "link", "add", dev, "type", "veth", "peer", "name", nicName, "netns", vm},
		{ipPath, "-n", host.NetNS, "link", "set", dev, "up"},
		{ipPath, "-n", vm, "link", "set", nicName, "address", port.MAC},
		{ipPath, "-n", vm, "addr", "add", fmt.Sprintf("%s/%d", port.IP, ones), "dev", nicName},
		{ipPath, "-n", vm, "link", "set", nicName, "up"},
		{nsenterPath, "--net=" + filepath.Join("/run/netns", vm), ethtoolPath, "-K", nicName, "tx", "off"},
	}
	if port.MetadataIP != "" {
		cmds = append(cmds, []string{ipPath, "-n", vm, "route", "add", MetadataAddress + "/32", "via", port.MetadataIP})
	}
	if port.Gateway != "" {
		cmds = append(cmds, []string{ipPath, "-n", vm, "route", "add", "default", "via", port.Gateway})
	}
	return append(cmds, []string{
		vsctlPath, "--db=unix:" + host.OVSDBSocket, "--timeout=20", "--", "--may-exist", "add-port", integrationBridge, dev,
		"--", "set", "Interface", dev, "external_ids:iface-id=" + port.ID,
	}), nil
}

// Plug plugs an instance for port on host. On an error it removes what it
// made.
func Plug(ctx context.Context, host Host, port Port) (*Instance, error) {
	cmds, err := PlugCommands(host, port)
	if err != nil {
		return nil, err
	}
	vm, dev := Names(port.ID)
	i := &Instance{NetNS: vm, Device: dev, host: host}
	for _, argv := range cmds {
		if _, err := run(ctx, argv...); err != nil {
			return nil, errors.Join(err, i.Close(context.WithoutCancel(ctx)))
		}
	}
	return i, nil
}

// Attach returns the instance Plug made for portID on host earlier,
// perhaps in another process, so that it can be used or closed.
func Attach(host Host, portID string) *Instance {
	vm, dev := Names(portID)
	return &Instance{NetNS: vm, Device: dev, host: host}
}

// PlugT is Plug for a test: it fails the test on an error and removes the
// instance when the test ends.
func PlugT(tb testing.TB, host Host, port Port) *Instance {
	tb.Helper()
	i, err := Plug(tb.Context(), host, port)
	if err != nil {
		tb.Fatalf("plugging a test instance for port %s: %v", port.ID, err)
	}
	tb.Cleanup(func() {
		if err := i.Close(context.Background()); err != nil {
			tb.Errorf("removing the test instance of port %s: %v", port.ID, err)
		}
	})
	return i
}

// Exec runs a program inside the VM's network namespace and returns its
// combined output. nsenter changes only the network namespace, so the
// program sees the host's files.
func (i *Instance) Exec(ctx context.Context, argv ...string) (string, error) {
	return run(ctx, append([]string{nsenterPath, "--net=" + filepath.Join("/run/netns", i.NetNS)}, argv...)...)
}

// Curl fetches http://169.254.169.254<path> from inside the VM and
// returns the body. A status of 400 or more is an error that carries the
// body, which comes from the metadata path and holds no secret.
func (i *Instance) Curl(ctx context.Context, path string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return i.Exec(ctx, curlPath, "-sS", "--fail-with-body", "--max-time", "15", "http://"+MetadataAddress+path)
}

// Close unplugs the instance: its port leaves br-int, and deleting the
// VM's namespace takes the veth, both ends, with it. It is safe to call
// more than once.
func (i *Instance) Close(ctx context.Context) error {
	var errs []error
	if _, err := run(ctx, vsctlPath, "--db=unix:"+i.host.OVSDBSocket, "--timeout=20", "--if-exists", "del-port", integrationBridge, i.Device); err != nil {
		errs = append(errs, err)
	}
	if out, err := run(ctx, ipPath, "netns", "delete", i.NetNS); err != nil && !strings.Contains(out, "No such file") {
		errs = append(errs, err)
	}
	// The outer end goes with its peer; this covers a half-made veth. The
	// kernel removes the outer end after the namespace deletion returns, so
	// it may vanish between the lookup and the deletion ("No such device").
	if out, err := run(ctx, ipPath, "-n", i.host.NetNS, "link", "delete", i.Device); err != nil &&
		!strings.Contains(out, "Cannot find device") && !strings.Contains(out, "No such file") &&
		!strings.Contains(out, "does not exist") && !strings.Contains(out, "No such device") {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// run runs a command with a timeout and returns its combined output; the
// error carries it too. Nothing here handles a secret.
func run(ctx context.Context, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
