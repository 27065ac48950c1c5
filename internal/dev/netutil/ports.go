// Package netutil holds small networking helpers shared by the devstack and
// the test harness.
package netutil

import "net"

// FreeLoopbackPorts asks the kernel for n distinct free TCP ports on
// 127.0.0.1. The listeners are held until all n are found, so the ports are
// distinct; another process may still take one before the caller binds it.
func FreeLoopbackPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
