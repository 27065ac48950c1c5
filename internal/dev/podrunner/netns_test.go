package podrunner

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeNetNSName(t *testing.T) {
	a := NodeNetNSName("/state/a", "node-1")
	if len(a) != len("anvil-")+8 || !strings.HasPrefix(a, "anvil-") || a != NodeNetNSName("/state/a", "node-1") {
		t.Errorf("NodeNetNSName = %q; want anvil- and 8 hex digits, the same every time", a)
	}
	for _, other := range []string{NodeNetNSName("/state/b", "node-1"), NodeNetNSName("/state/a", "node-2")} {
		if other == a {
			t.Errorf("two runners or two nodes share the namespace %s", a)
		}
	}
}

func TestLinkedNamespaces(t *testing.T) {
	out := `1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
2: ovs-netdev: <BROADCAST,PROMISC> mtu 1500 qdisc noop state DOWN mode DEFAULT group default qlen 1000\    link/ether 4e:1a:0b:2c:3d:4e brd ff:ff:ff:ff:ff:ff
7: tape86e3f43-40@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\    link/ether 9a:1b:2c:3d:4e:5f brd ff:ff:ff:ff:ff:ff link-netns ovnmeta-e86e3f43-4da5-4e48-aca5-830397d6ba70
9: anvm0e957c17o@if8: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\    link/ether 1a:1b:2c:3d:4e:5f brd ff:ff:ff:ff:ff:ff link-netns anvil-vm-0e957c17
`
	got := linkedNamespaces(out, agentNetnsPrefix)
	want := map[string]string{"tape86e3f43-40": "ovnmeta-e86e3f43-4da5-4e48-aca5-830397d6ba70"}
	if !maps.Equal(got, want) {
		t.Errorf("linkedNamespaces = %v, want %v", got, want)
	}
}

func TestIsAgentVeth(t *testing.T) {
	for name, want := range map[string]bool{
		"tape86e3f43-40": true, "tapabcdef0123-0": false, "tape86e3f43-41": false, "tape86e3f43-4": false,
		"tapE86E3F43-40": false, "anvm0e957c17o": false, "br-int": false,
	} {
		if got := isAgentVeth(name); got != want {
			t.Errorf("isAgentVeth(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestTCPAddresses(t *testing.T) {
	got := tcpAddresses("ssl:127.0.0.1:16642, tcp:[::1]:6642,unix:/run/x.sock,pssl:6642")
	if want := []string{"127.0.0.1:16642", "[::1]:6642"}; !slices.Equal(got, want) {
		t.Errorf("tcpAddresses = %q, want %q", got, want)
	}
}

// TestChassisCommandsInNetNS: on a node with a namespace of its own,
// ovs-vswitchd and ovn-controller run inside it through nsenter, the
// datapath is netdev, and the Southbound addresses are relayed.
func TestChassisCommandsInNetNS(t *testing.T) {
	c := ovnFixture(t, "ch-ovs-x", corev1.Container{Name: "ovs-vswitchd"}, nil)
	c.Mounts = nil
	c.NetNS = "anvil-0123abcd"
	sock := filepath.Join(c.HostRoot, "run", "openvswitch", "db.sock")
	vswitchd, _ := buildVswitchd(c)
	if vswitchd.Path != NsenterPath || !slices.Equal(vswitchd.Args[:4], []string{"--net=/run/netns/anvil-0123abcd", OVSVswitchdPath, "unix:" + sock, "--disable-system"}) ||
		slices.Contains(vswitchd.Args, "--enable-dummy=override") {
		t.Errorf("ovs-vswitchd %s %q", vswitchd.Path, vswitchd.Args)
	}

	c = ovnFixture(t, "ch-ctl-x", corev1.Container{Name: "ovn-controller"}, map[string]string{"OVN_REMOTE": "ssl:10.96.0.9:6642"})
	c.NetNS = "anvil-0123abcd"
	installIdentity(t, c)
	ctl, err := buildOVNController(c)
	if err != nil {
		t.Fatal(err)
	}
	if ctl.Path != NsenterPath || ctl.Args[1] != OVNControllerPath || !slices.Equal(ctl.Relays, []string{"127.30.0.1:16642"}) {
		t.Errorf("ovn-controller %s %q relays %q", ctl.Path, ctl.Args, ctl.Relays)
	}

	c = ovnFixture(t, "ch-ctl-x", corev1.Container{Name: "apply-node"}, map[string]string{"NODE_NAME": "node-1", "OVN_REMOTE": "ssl:10.96.0.9:6642"})
	c.NetNS = "anvil-0123abcd"
	if err := os.MkdirAll(c.Mounts[2].HostPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Mounts[2].HostPath, "node-1"), []byte("SYSTEM_ID=abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply, err := buildApplyNode(c)
	if err != nil {
		t.Fatal(err)
	}
	// ovs-vsctl talks to the database's unix socket; it stays on the host.
	if apply.Path != OVSVsctlPath || !slices.Contains(apply.Args, `external_ids:ovn-bridge-datapath-type="netdev"`) ||
		!slices.Equal(apply.Relays, []string{"127.30.0.1:16642"}) {
		t.Errorf("apply-node %s %q relays %q", apply.Path, apply.Args, apply.Relays)
	}
}
