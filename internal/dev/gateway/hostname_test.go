package gateway

import (
	"slices"
	"testing"
)

func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"", "anything.example.com", true},
		{"a.example.com", "a.example.com", true},
		{"a.example.com", "b.example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true}, // more than one label, unlike certificates
		{"*.example.com", "example.com", false},
		{"*.example.com", "aexample.com", false},
	} {
		if got := hostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("hostMatches(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

func TestIntersectHostname(t *testing.T) {
	for _, tc := range []struct {
		listener, route, want string
		ok                    bool
	}{
		{"", "a.example.com", "a.example.com", true},
		{"a.example.com", "A.Example.com.", "a.example.com", true},
		{"a.example.com", "b.example.com", "", false},
		{"*.example.com", "a.example.com", "a.example.com", true},
		{"a.example.com", "*.example.com", "a.example.com", true},
		{"*.example.com", "*.a.example.com", "*.a.example.com", true},
		{"*.a.example.com", "*.example.com", "*.a.example.com", true},
		{"*.example.com", "*.example.org", "", false},
		{"*.example.com", "example.com", "", false},
	} {
		got, ok := intersectHostname(tc.listener, tc.route)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("intersectHostname(%q, %q) = %q, %v; want %q, %v", tc.listener, tc.route, got, ok, tc.want, tc.ok)
		}
	}
}

func TestEffectiveHostnames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener string
		route    []string
		want     []string
		ok       bool
	}{
		{"neither restricts", "", nil, nil, true},
		{"only the listener restricts", "nova-metadata.127-0-0-1.nip.io", nil, []string{"nova-metadata.127-0-0-1.nip.io"}, true},
		{"only the route restricts", "", []string{"a.example.com", "b.example.com"}, []string{"a.example.com", "b.example.com"}, true},
		{"some match", "*.example.com", []string{"a.example.com", "a.example.org"}, []string{"a.example.com"}, true},
		{"none match", "nova-metadata.127-0-0-1.nip.io", []string{"other.example.com"}, nil, false},
		{"duplicates collapse", "a.example.com", []string{"a.example.com", "*.example.com"}, []string{"a.example.com"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := effectiveHostnames(tc.listener, tc.route)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
