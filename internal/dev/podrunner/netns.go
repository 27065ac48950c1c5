package podrunner

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// Programs that make and enter network namespaces, from Debian's iproute2
// and util-linux.
const (
	// IPPath is iproute2's ip.
	IPPath = "/usr/sbin/ip"
	// NsenterPath starts a program in a node's network namespace.
	NsenterPath = "/usr/bin/nsenter"
)

// Where network namespaces live, and the runner's short run directory.
const (
	// netnsDir is where `ip netns add` mounts named namespaces. The
	// agent's own namespaces go there too, so this is the host's
	// directory, not a node's hostPath.
	netnsDir = "/run/netns"
	// shortRunRoot holds, per node namespace, what needs a short path: a
	// unix socket's path is limited to 107 bytes, and a pod's work
	// directory under a test's temporary directory is longer than that.
	shortRunRoot = "/run/anvil-podrunner"
	// agentNetnsPrefix names the namespaces the OVN metadata agent makes,
	// one per network: ovnmeta-<network id>.
	agentNetnsPrefix = "ovnmeta-"
	// netnsCommandTimeout bounds one ip or ovs-vsctl call.
	netnsCommandTimeout = 30 * time.Second
)

// NodeNetNSName is the name of the network namespace the runner with
// state directory stateDir makes for node: "anvil-" and 8 hex digits of a
// hash of both. The state directory is part of it so that two runners of
// one host, a developer's and a test's, never share a namespace; the hash
// keeps the name short and of fixed length.
func NodeNetNSName(stateDir, node string) string {
	sum := sha256.Sum256([]byte(stateDir + "\x00" + node))
	return "anvil-" + hex.EncodeToString(sum[:])[:8]
}

// netnsPath is the file of a named network namespace, for nsenter --net.
func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// shortRunDir is the node namespace's directory for short paths.
func shortRunDir(netns string) string { return filepath.Join(shortRunRoot, netns) }

// nodeNetwork is the network namespace of a node that has one: made when
// the runner starts, deleted when it stops, with the relays that let
// the programs inside reach servers on the host's loopback.
type nodeNetwork struct {
	name  string
	log   logr.Logger
	relay *netnsRelay
	// dns answers the runner's host aliases inside; nil without any.
	dns *nodeDNS
}

// runIP runs ip with args and returns its combined output.
func runIP(ctx context.Context, args ...string) (string, error) {
	return runTimed(ctx, IPPath, args...)
}

// runTimed runs a helper program with a timeout and returns its combined
// output; the error carries that output, which names devices and
// namespaces and no secret.
func runTimed(ctx context.Context, program string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, netnsCommandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, program, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", filepath.Base(program), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// createNodeNetwork makes the node's namespace with its loopback up. A
// namespace of that name left by a runner of the same state directory that
// died is removed first, with what its agent left, since nothing in it can
// be trusted to match the new run.
func createNodeNetwork(ctx context.Context, name string, aliases HostAliases, log logr.Logger) (*nodeNetwork, error) {
	if _, err := os.Stat(netnsPath(name)); err == nil {
		log.Info("removing a network namespace an earlier run left", "netns", name)
		if err := deleteNamespace(ctx, name, log); err != nil {
			return nil, err
		}
	}
	if _, err := runIP(ctx, "netns", "add", name); err != nil {
		return nil, err
	}
	// The relays listen on its loopback, which a new namespace has down.
	if _, err := runIP(ctx, "-n", name, "link", "set", "lo", "up"); err != nil {
		_, _ = runIP(context.WithoutCancel(ctx), "netns", "delete", name)
		return nil, err
	}
	if err := os.MkdirAll(shortRunDir(name), 0o700); err != nil {
		_, _ = runIP(context.WithoutCancel(ctx), "netns", "delete", name)
		return nil, err
	}
	n := &nodeNetwork{name: name, log: log, relay: newNetnsRelay(name, aliases, log)}
	if len(aliases) > 0 {
		var err error
		if n.dns, err = startNodeDNS(name, hostNameservers(), aliases, log, func(ip netip.Addr) error {
			return addLoopbackAddress(ctx, name, ip)
		}); err != nil {
			_ = deleteNamespace(context.WithoutCancel(ctx), name, log)
			return nil, err
		}
	}
	log.Info("made a network namespace for the node", "netns", name)
	return n, nil
}

// hostNameservers are the nameservers the host's resolver configuration
// names, which the programs in a node's namespace query too.
func hostNameservers() []netip.Addr {
	data, err := os.ReadFile(resolvConfPath)
	if err != nil {
		// No file: glibc queries 127.0.0.1, and so does the namespace.
		data = nil
	}
	return resolvConfNameservers(data)
}

// close stops the relays and the responder and deletes the namespace
// with everything the node's programs left in it; the pods' processes
// have stopped by then.
func (n *nodeNetwork) close(ctx context.Context) error {
	n.relay.close()
	n.dns.close()
	return deleteNamespace(ctx, n.name, n.log)
}

// deleteNamespace removes a node's namespace: first the agent's namespaces
// linked to it, with the haproxy processes in them, then whatever process
// still runs inside, then the namespace and its short run directory.
func deleteNamespace(ctx context.Context, name string, log logr.Logger) error {
	var errs []error
	if _, err := clearAgentNamespaces(ctx, name, log); err != nil {
		errs = append(errs, err)
	}
	if err := killNamespacePids(ctx, name); err != nil {
		errs = append(errs, err)
	}
	if _, err := runIP(ctx, "netns", "delete", name); err != nil && !strings.Contains(err.Error(), "No such file") {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(shortRunDir(name)); err != nil {
		errs = append(errs, err)
	}
	// The root goes too once no runner has a namespace left; one that
	// still has fails the removal, which is fine.
	_ = os.Remove(shortRunRoot)
	if len(errs) == 0 {
		log.Info("deleted the node's network namespace", "netns", name)
	}
	return errors.Join(errs...)
}

// clearAgentNamespaces deletes the OVN metadata agent's namespaces whose
// veth peers are in the node's namespace, after killing what runs in them
// (haproxy, which detaches from the agent's process group), and the
// node-side veths. It returns those veths' names. Only namespaces linked
// to the node's are touched: another node's agent may serve other
// networks. The veth is deleted by name because a namespace goes away
// only once its last process has been reaped, and its devices with it,
// later than `ip netns delete` returns.
func clearAgentNamespaces(ctx context.Context, node string, log logr.Logger) ([]string, error) {
	out, err := runIP(ctx, "-n", node, "-o", "link", "show")
	if err != nil {
		if !namespaceExists(node) {
			return nil, nil
		}
		return nil, err
	}
	links := linkedNamespaces(out, agentNetnsPrefix)
	var errs []error
	var devices []string
	for dev, ns := range links {
		devices = append(devices, dev)
		if _, err := runIP(ctx, "-n", node, "link", "delete", dev); err != nil {
			errs = append(errs, err)
		}
		if !namespaceExists(ns) {
			continue
		}
		if err := killNamespacePids(ctx, ns); err != nil {
			errs = append(errs, err)
		}
		if _, err := runIP(ctx, "netns", "delete", ns); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("deleted a namespace of the metadata agent", "netns", ns, "node", node)
	}
	return devices, errors.Join(errs...)
}

// namespaceExists tells whether a named namespace is mounted.
func namespaceExists(name string) bool {
	_, err := os.Stat(netnsPath(name))
	return err == nil
}

// linkedNamespaces reads `ip -o link show` and returns, per device whose
// peer is in a namespace named with prefix, that namespace. ip prints a
// veth as "7: tapX@if6: <...> ... link-netns ovnmeta-..." once it knows the
// peer's namespace by name.
func linkedNamespaces(ipLinkOutput, prefix string) map[string]string {
	out := map[string]string{}
	s := bufio.NewScanner(strings.NewReader(ipLinkOutput))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		dev, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		for i := 2; i+1 < len(fields); i++ {
			if fields[i] == "link-netns" && strings.HasPrefix(fields[i+1], prefix) {
				out[dev] = fields[i+1]
			}
		}
	}
	return out
}

// killNamespacePids kills every process in a named namespace. The
// namespaces are the runner's own, or its agent's, so whatever runs there
// was started by the runner's pods.
func killNamespacePids(ctx context.Context, name string) error {
	out, err := runIP(ctx, "netns", "pids", name)
	if err != nil {
		if !namespaceExists(name) {
			return nil
		}
		return err
	}
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// clearAgentLeftovers removes what an earlier run of the OVN metadata
// agent on the node left, before the next one starts: the agent's
// namespaces linked to the node's, with their haproxy and veths, and the
// br-int ports of those veths and of any other veth named like the agent's
// whose device is gone. The agent then makes
// each network's namespace, veth and port anew. A port it reused would
// stay dead on the userspace datapath, which keeps reading the deleted
// device of that name.
func clearAgentLeftovers(ctx context.Context, netns, dbSock string) error {
	log := logr.FromContextOrDiscard(ctx)
	gone, err := clearAgentNamespaces(ctx, netns, log)
	if err != nil {
		return err
	}
	db := "--db=unix:" + dbSock
	out, err := runTimed(ctx, OVSVsctlPath, db, "--timeout=10", "--bare", "--columns=name", "list", "Port")
	if err != nil {
		return err
	}
	for _, name := range strings.Fields(out) {
		if !isAgentVeth(name) {
			continue
		}
		if _, err := runIP(ctx, "-n", netns, "link", "show", "dev", name); err == nil && !slices.Contains(gone, name) {
			continue
		}
		if _, err := runTimed(ctx, OVSVsctlPath, db, "--timeout=10", "--if-exists", "del-port", name); err != nil {
			return err
		}
		log.Info("removed a port the metadata agent left in br-int", "port", name, "netns", netns)
	}
	return nil
}

// isAgentVeth tells whether an interface name has the shape of the
// agent's node-side veths: "tap", the first 10 characters of a network
// id, and "0".
func isAgentVeth(name string) bool {
	mid, ok := strings.CutPrefix(name, "tap")
	if !ok || len(mid) != 11 || mid[10] != '0' {
		return false
	}
	for _, r := range mid[:10] {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') && r != '-' {
			return false
		}
	}
	return true
}
