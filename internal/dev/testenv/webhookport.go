package testenv

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
)

// Webhook ports are picked from [webhookPortMin, webhookPortMin+webhookPorts):
// below the kernel's ephemeral range (32768 and up on Linux) and below
// Kubernetes' NodePort range (30000 to 32767).
const (
	webhookPortMin = 20000
	webhookPorts   = 10000
)

// webhookPort picks a free loopback port for the management cluster's
// webhook server. envtest would pick one the kernel hands out for an
// ephemeral bind, and the webhook server binds it only once the package's
// apiservers are up, seconds later; meanwhile any outgoing connection on
// the machine may be given the same port as its local end, and the server
// then fails with "address already in use" (seen once in make test). A
// port below the ephemeral range is never handed out that way, so only
// another explicit bind of the same port could take it.
func webhookPort() (int, error) {
	for range 64 {
		port := webhookPortMin + rand.IntN(webhookPorts)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, err
		}
		return port, nil
	}
	return 0, errors.New("no free loopback port for the webhook server below the ephemeral range")
}
