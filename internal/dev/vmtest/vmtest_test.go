package vmtest

import (
	"slices"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	ns, dev := Names("0e5c995f-3182-444e-baf5-5f77635ef055")
	if len(dev) > 15 || !strings.HasPrefix(ns, "anvil-vm-") || !strings.HasPrefix(dev, "anvm") {
		t.Errorf("Names = %q, %q; a device name has at most 15 characters", ns, dev)
	}
	if other, _ := Names("another-port"); other == ns {
		t.Errorf("two ports share the namespace %s", ns)
	}
}

func TestPlugCommands(t *testing.T) {
	host := Host{NetNS: "anvil-0123abcd", OVSDBSocket: "/state/n/host/run/openvswitch/db.sock"}
	port := Port{ID: "p-1", MAC: "fa:16:3e:00:00:01", IP: "10.78.0.5", CIDR: "10.78.0.0/24", MetadataIP: "10.78.0.2", Gateway: "10.78.0.1"}
	cmds, err := PlugCommands(host, port)
	if err != nil {
		t.Fatal(err)
	}
	vm, dev := Names("p-1")
	var lines []string
	for _, c := range cmds {
		lines = append(lines, strings.Join(c, " "))
	}
	want := []string{
		ipPath + " netns add " + vm,
		ipPath + " -n " + vm + " link set lo up",
		ipPath + " -n anvil-0123abcd link add " + dev + " type veth peer name eth0 netns " + vm,
		ipPath + " -n anvil-0123abcd link set " + dev + " up",
		ipPath + " -n " + vm + " link set eth0 address fa:16:3e:00:00:01",
		ipPath + " -n " + vm + " addr add 10.78.0.5/24 dev eth0",
		ipPath + " -n " + vm + " link set eth0 up",
		nsenterPath + " --net=/run/netns/" + vm + " " + ethtoolPath + " -K eth0 tx off",
		ipPath + " -n " + vm + " route add 169.254.169.254/32 via 10.78.0.2",
		ipPath + " -n " + vm + " route add default via 10.78.0.1",
		vsctlPath + " --db=unix:/state/n/host/run/openvswitch/db.sock --timeout=20 -- --may-exist add-port br-int " + dev +
			" -- set Interface " + dev + " external_ids:iface-id=p-1",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("PlugCommands =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// No command may make anything in the host's own namespace: every
	// ip call names a namespace, except the one that adds the VM's.
	for _, c := range cmds {
		if c[0] == ipPath && c[1] != "-n" && !slices.Equal(c[1:3], []string{"netns", "add"}) {
			t.Errorf("%q runs in the host's network namespace", c)
		}
	}
}

func TestPlugCommandsRefuses(t *testing.T) {
	host := Host{NetNS: "n", OVSDBSocket: "/s"}
	ok := Port{ID: "p", MAC: "fa:16:3e:00:00:01", IP: "10.0.0.5", CIDR: "10.0.0.0/24"}
	for name, tc := range map[string]struct {
		host Host
		port Port
	}{
		"no namespace":   {Host{OVSDBSocket: "/s"}, ok},
		"bad MAC":        {host, Port{ID: "p", MAC: "x", IP: ok.IP, CIDR: ok.CIDR}},
		"outside subnet": {host, Port{ID: "p", MAC: ok.MAC, IP: "10.1.0.5", CIDR: ok.CIDR}},
		"IPv6":           {host, Port{ID: "p", MAC: ok.MAC, IP: "fd00::5", CIDR: "fd00::/64"}},
		"no port id":     {host, Port{MAC: ok.MAC, IP: ok.IP, CIDR: ok.CIDR}},
		"no CIDR at all": {host, Port{ID: "p", MAC: ok.MAC, IP: ok.IP}},
	} {
		if _, err := PlugCommands(tc.host, tc.port); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
