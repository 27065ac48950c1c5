package testenv

import (
	"errors"
	"net"
	"sync"
	"testing"
)

// closedAddr is a loopback address that accepts connections and closes
// them at once; the listener lives as long as the test process.
var closedAddr = sync.OnceValues(func() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				_ = c.Close()
			}
		}
	}()
	return l.Addr().String(), nil
})

// ClosedAddress returns a host:port on loopback that accepts a connection
// and closes it at once. A test gives it to a component that must dial an
// address (a Keystone, say) without ever reaching a real service or a
// resolver off this machine.
func ClosedAddress(tb testing.TB) string {
	tb.Helper()
	addr, err := closedAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}
