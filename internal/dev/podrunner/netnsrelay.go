package podrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// netnsRelay makes TCP servers of the host reachable from inside a node's
// network namespace at the very address they have on the host. Loopback
// TCP does not cross namespaces, and the programs inside dial what the
// contract gives them (the Southbound database, Nova's metadata API),
// often on 127.0.0.1. For each such address the relay listens inside the
// namespace and forwards every connection, bytes untouched, to the same
// address on the host; TLS passes through, and no address in any
// configuration needs rewriting. It is the choice over a veth to the host
// with a route: that would need addresses of the host's, a route and NAT
// to reach servers bound to the host's loopback, which the kernel drops as
// martians coming from another interface.
type netnsRelay struct {
	name    string
	log     logr.Logger
	aliases HostAliases

	mu        sync.Mutex
	listeners map[string]net.Listener
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// newNetnsRelay returns a relay into the named namespace.
func newNetnsRelay(name string, aliases HostAliases, log logr.Logger) *netnsRelay {
	return &netnsRelay{name: name, log: log, aliases: aliases, listeners: map[string]net.Listener{}, conns: map[net.Conn]struct{}{}}
}

// ensure relays each "host:port" that is not relayed yet. A host name is
// one of the runner's aliases, which the programs inside resolve through
// the node's responder, or is resolved on the host, as a program inside
// would resolve it through the host's files. An address that is not
// loopback is added to the namespace's loopback first, so that it can be
// bound there.
func (r *netnsRelay) ensure(ctx context.Context, addrs []string) error {
	var errs []error
	for _, addr := range addrs {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("relay address %q: %w", addr, err))
			continue
		}
		ips, err := r.lookup(ctx, host)
		if err != nil {
			errs = append(errs, fmt.Errorf("relay address %q: %w", addr, err))
			continue
		}
		for _, ip := range ips {
			if err := r.ensureOne(ctx, net.JoinHostPort(ip, port)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// lookup resolves a relayed host: an alias to its address, any other
// name through the host's resolver.
func (r *netnsRelay) lookup(ctx context.Context, host string) ([]string, error) {
	if ip, ok := r.aliases.lookup(host); ok {
		return []string{ip.String()}, nil
	}
	return net.DefaultResolver.LookupHost(ctx, host)
}

// addLoopbackAddress adds ip to the loopback of the named namespace, so
// that a server can be bound there on an address the programs inside dial.
func addLoopbackAddress(ctx context.Context, namespace string, ip netip.Addr) error {
	bits := 32
	if ip.Is6() {
		bits = 128
	}
	_, err := runIP(ctx, "-n", namespace, "addr", "replace", ip.String()+"/"+strconv.Itoa(bits), "dev", "lo")
	return err
}

// ensureOne relays one address.
func (r *netnsRelay) ensureOne(ctx context.Context, addr string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the node's network namespace is going away")
	}
	if _, ok := r.listeners[addr]; ok {
		return nil
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip, err := netip.ParseAddr(host); err == nil && !ip.IsLoopback() {
		if err := addLoopbackAddress(ctx, r.name, ip); err != nil {
			return err
		}
	}
	ln, err := listenInNamespace(netnsPath(r.name), addr)
	if err != nil {
		return fmt.Errorf("listening on %s in %s: %w", addr, r.name, err)
	}
	r.listeners[addr] = ln
	r.log.Info("relaying a host address into the node's network namespace", "address", addr, "netns", r.name)
	r.wg.Add(1)
	go r.accept(ln, addr)
	return nil
}

// listenInNamespace opens a TCP listener inside the namespace at path.
func listenInNamespace(path, addr string) (net.Listener, error) {
	c, err := openInNamespace(path, func() (io.Closer, error) { return net.Listen("tcp", addr) })
	if err != nil {
		return nil, err
	}
	return c.(net.Listener), nil
}

// listenPacketInNamespace opens a UDP socket inside the namespace at path.
func listenPacketInNamespace(path, addr string) (net.PacketConn, error) {
	c, err := openInNamespace(path, func() (io.Closer, error) { return net.ListenPacket("udp", addr) })
	if err != nil {
		return nil, err
	}
	return c.(net.PacketConn), nil
}

// openInNamespace runs open, which makes a socket, on a thread that has
// entered the namespace at path; the socket stays in that namespace
// whatever thread uses it later. The thread goes back to the host's
// namespace; if it cannot, it stays locked, so that the runtime retires
// it rather than run other goroutines in the wrong namespace.
func openInNamespace(path string, open func() (io.Closer, error)) (io.Closer, error) {
	type result struct {
		c   io.Closer
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer host.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer target.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		c, oerr := open()
		if err := setns(host); err != nil {
			// Locked for good: the goroutine ends and the thread with it.
			if oerr == nil {
				_ = c.Close()
			}
			done <- result{err: fmt.Errorf("returning to the host's network namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		if oerr != nil {
			done <- result{err: oerr}
			return
		}
		done <- result{c: c}
	}()
	res := <-done
	return res.c, res.err
}

// setns moves the calling thread into the network namespace of f.
func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// accept serves one listener until it is closed.
func (r *netnsRelay) accept(ln net.Listener, addr string) {
	defer r.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		if !r.track(conn) {
			_ = conn.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(conn)
			r.forward(conn, addr)
		}()
	}
}

// forward connects a client inside the namespace to the same address on
// the host. Goroutines that are not locked to a thread run in the host's
// namespace, so a plain dial reaches the host's server.
func (r *netnsRelay) forward(client net.Conn, addr string) {
	server, err := net.DialTimeout("tcp", addr, nodePortDialTimeout)
	if err != nil {
		r.log.V(1).Info("cannot reach a relayed address on the host", "address", addr, "error", err.Error())
		return
	}
	if !r.track(server) {
		_ = server.Close()
		return
	}
	defer r.untrack(server)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); pipe(server, client) }()
	go func() { defer both.Done(); pipe(client, server) }()
	both.Wait()
}

// track records an open connection so that close can end it; it reports
// false once the relay is closing.
func (r *netnsRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

// untrack closes and forgets a connection.
func (r *netnsRelay) untrack(c net.Conn) {
	_ = c.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
}

// close ends every listener and connection and waits for their
// goroutines.
func (r *netnsRelay) close() {
	r.mu.Lock()
	r.closed = true
	for addr, ln := range r.listeners {
		_ = ln.Close()
		delete(r.listeners, addr)
	}
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
