package gateway

import (
	"net"
	"strings"
)

// normalizeHost lowercases a hostname and drops a port and a trailing dot,
// so that a Host header, an SNI name and a spec hostname compare equal.
func normalizeHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// isWildcard tells whether a Gateway API hostname is a wildcard ("*.a.b").
func isWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// hostMatches tells whether a concrete host falls under a Gateway API
// hostname pattern. Unlike a certificate wildcard, "*.example.com" covers any
// number of extra labels ("a.b.example.com"), but never "example.com" itself.
// An empty pattern matches every host.
func hostMatches(pattern, host string) bool {
	switch {
	case pattern == "":
		return true
	case isWildcard(pattern):
		suffix := pattern[1:] // ".example.com"
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	default:
		return pattern == host
	}
}

// intersectHostname returns the hostname that both a listener and a route
// hostname accept, the more specific of the two, or false when they accept
// no host in common. An empty listener hostname accepts every host.
func intersectHostname(listener, route string) (string, bool) {
	listener, route = normalizeHost(listener), normalizeHost(route)
	switch {
	case listener == "":
		return route, true
	case listener == route:
		return route, true
	case !isWildcard(route):
		return route, hostMatches(listener, route)
	case !isWildcard(listener):
		return listener, hostMatches(route, listener)
	}
	// Both are wildcards: the longer one is the intersection when it lies
	// under the shorter one.
	if len(route) > len(listener) && strings.HasSuffix(route, listener[1:]) {
		return route, true
	}
	if len(listener) > len(route) && strings.HasSuffix(listener, route[1:]) {
		return listener, true
	}
	return "", false
}

// effectiveHostnames returns the hostnames a route serves on a listener: the
// intersections of the listener's hostname with each of the route's. An empty
// result with ok true means every host (neither side restricts); ok false
// means the route's hostnames and the listener's have nothing in common,
// which the route status reports as NoMatchingListenerHostname.
func effectiveHostnames(listener string, route []string) (hosts []string, ok bool) {
	if len(route) == 0 {
		if listener == "" {
			return nil, true
		}
		return []string{normalizeHost(listener)}, true
	}
	seen := map[string]bool{}
	for _, r := range route {
		h, match := intersectHostname(listener, r)
		if match && !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	return hosts, len(hosts) > 0
}
