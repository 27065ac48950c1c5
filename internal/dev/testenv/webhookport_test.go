package testenv

import (
	"net"
	"strconv"
	"testing"
)

// The picked port is free, and outside both the ephemeral range and the
// NodePort range.
func TestWebhookPortIsBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		port, err := webhookPort()
		if err != nil {
			t.Fatal(err)
		}
		if port < webhookPortMin || port >= 30000 {
			t.Fatalf("port %d is outside [%d, 30000)", port, webhookPortMin)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("the picked port %d is not free: %v", port, err)
		}
		_ = l.Close()
	}
}
