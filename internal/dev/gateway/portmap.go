package gateway

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PortMap maps a listener's port to the host port the data plane binds.
// Listener ports below 1024 need privileges, and several stacks may share a
// machine, so the devstack serves port 443 on 8443. Ports without an entry
// are served on the same number.
type PortMap map[int32]int32

// HostPort returns the host port that serves a listener port.
func (m PortMap) HostPort(listenerPort int32) int32 {
	if p, ok := m[listenerPort]; ok {
		return p
	}
	return listenerPort
}

// String renders the map as ParsePortMap reads it, sorted by listener port.
func (m PortMap) String() string {
	parts := make([]string, 0, len(m))
	for l, h := range m {
		parts = append(parts, fmt.Sprintf("%d=%d", l, h))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// ParsePortMap reads "LISTENER=HOST" pairs separated by commas, such as
// "443=8443,80=8080". Each listener port may appear once, and two listener
// ports may not share a host port.
func ParsePortMap(spec string) (PortMap, error) {
	m := PortMap{}
	hosts := map[int32]int32{}
	for _, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		l, h, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("port mapping %q: want LISTENER=HOST, such as 443=8443", pair)
		}
		lp, err := parsePort(l)
		if err != nil {
			return nil, fmt.Errorf("port mapping %q: listener port: %w", pair, err)
		}
		hp, err := parsePort(h)
		if err != nil {
			return nil, fmt.Errorf("port mapping %q: host port: %w", pair, err)
		}
		if _, dup := m[lp]; dup {
			return nil, fmt.Errorf("port mapping %q: listener port %d is mapped twice", pair, lp)
		}
		if other, dup := hosts[hp]; dup {
			return nil, fmt.Errorf("port mapping %q: host port %d already serves listener port %d", pair, hp, other)
		}
		m[lp], hosts[hp] = hp, lp
	}
	return m, nil
}

func parsePort(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port between 1 and 65535", s)
	}
	return int32(n), nil
}
