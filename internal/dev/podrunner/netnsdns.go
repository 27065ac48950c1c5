package podrunner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"golang.org/x/net/dns/dnsmessage"
)

// resolvConfPath is the resolver configuration every program on the host
// reads, the ones inside a node's namespace too.
const resolvConfPath = "/etc/resolv.conf"

// dnsTTL is the time to live of an answer: short, since an alias only
// changes with the runner's flags, and a cache should not outlive a run.
const dnsTTL = 5

// HostAliases maps host names to addresses, as a pod's hostAliases or
// /etc/hosts would. Programs inside a node's network namespace resolve
// them through the runner (see Options.HostAliases); keys are compared
// without case and without a trailing dot.
type HostAliases map[string]netip.Addr

// ParseHostAlias reads "name=address", the form of anvil-podrunner's
// --host-alias. The name must be a DNS name; the address an IP literal.
func ParseHostAlias(s string) (string, netip.Addr, error) {
	name, addr, ok := strings.Cut(s, "=")
	name = canonicalHost(name)
	if !ok || name == "" {
		return "", netip.Addr{}, fmt.Errorf("host alias %q is not name=address", s)
	}
	if _, err := dnsmessage.NewName(name + "."); err != nil || strings.ContainsAny(name, " \t/:") {
		return "", netip.Addr{}, fmt.Errorf("host alias %q: %q is not a host name", s, name)
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil || ip.Zone() != "" {
		return "", netip.Addr{}, fmt.Errorf("host alias %q: %q is not an IP address", s, addr)
	}
	return name, ip, nil
}

// lookup returns the address of an aliased name.
func (a HostAliases) lookup(name string) (netip.Addr, bool) {
	ip, ok := a[canonicalHost(name)]
	return ip, ok
}

// canonicalHost lower-cases a name and drops a trailing dot.
func canonicalHost(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

// resolvConfNameservers returns the nameservers a resolver configuration
// names, at most three as glibc reads them, or 127.0.0.1, glibc's choice
// when it names none. Scoped IPv6 addresses are left out: they cannot be
// bound on a namespace's loopback.
func resolvConfNameservers(data []byte) []netip.Addr {
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() && len(out) < 3 {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		ip, err := netip.ParseAddr(fields[1])
		if err != nil || ip.Zone() != "" {
			continue
		}
		out = append(out, ip.Unmap())
	}
	if len(out) == 0 {
		out = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	}
	return out
}

// answerDNS builds the reply to one query from the aliases alone: the
// alias's address for a question of its family (A or AAAA), an empty
// answer for the other types of an aliased name, and NXDOMAIN for every
// other name. It never forwards: nothing in a node's namespace reaches a
// real resolver, and a quick NXDOMAIN fails a lookup at once instead of
// after the resolver's timeouts.
func answerDNS(query []byte, aliases HostAliases) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, fmt.Errorf("reading a DNS query: %w", err)
	}
	if h.Response {
		return nil, errors.New("a DNS response is not a query")
	}
	q, err := p.Question()
	if err != nil {
		return nil, fmt.Errorf("reading a DNS question: %w", err)
	}
	reply := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	ip, known := aliases.lookup(q.Name.String())
	switch {
	case h.OpCode != 0:
		reply.RCode = dnsmessage.RCodeNotImplemented
	case !known:
		reply.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, reply)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if reply.RCode == dnsmessage.RCodeSuccess && q.Class == dnsmessage.ClassINET {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		switch {
		case q.Type == dnsmessage.TypeA && ip.Is4():
			err = b.AResource(rh, dnsmessage.AResource{A: ip.As4()})
		case q.Type == dnsmessage.TypeAAAA && ip.Is6():
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: ip.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// nodeDNS answers the aliases inside a node's namespace, on the addresses
// of the host's nameservers, where the programs inside send their
// queries: they read the host's /etc/resolv.conf, but the host's
// nameservers are out of the namespace's reach.
type nodeDNS struct {
	log   logr.Logger
	conns []net.PacketConn
	wg    sync.WaitGroup
}

// startNodeDNS binds a responder on each of the nameservers inside the
// namespace, adding an address that is not loopback to the namespace's
// loopback first.
func startNodeDNS(namespace string, servers []netip.Addr, aliases HostAliases, log logr.Logger, addAddress func(netip.Addr) error) (*nodeDNS, error) {
	d := &nodeDNS{log: log}
	for _, ip := range servers {
		if !ip.IsLoopback() {
			if err := addAddress(ip); err != nil {
				d.close()
				return nil, err
			}
		}
		addr := netip.AddrPortFrom(ip, 53).String()
		conn, err := listenPacketInNamespace(netnsPath(namespace), addr)
		if err != nil {
			d.close()
			return nil, fmt.Errorf("answering DNS on %s in %s: %w", addr, namespace, err)
		}
		d.conns = append(d.conns, conn)
		d.wg.Add(1)
		go d.serve(conn, aliases)
	}
	log.Info("answering the host aliases' names inside the node's network namespace", "netns", namespace, "nameservers", servers, "names", len(aliases))
	return d, nil
}

// serve answers one socket's queries until it is closed. A query that is
// not one is dropped, as a resolver would.
func (d *nodeDNS) serve(conn net.PacketConn, aliases HostAliases) {
	defer d.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return
		}
		reply, err := answerDNS(buf[:n], aliases)
		if err != nil {
			d.log.V(1).Info("dropping a DNS message", "from", from.String(), "error", err.Error())
			continue
		}
		_, _ = conn.WriteTo(reply, from)
	}
}

// close stops the responder.
func (d *nodeDNS) close() {
	if d == nil {
		return
	}
	for _, c := range d.conns {
		_ = c.Close()
	}
	d.wg.Wait()
}
