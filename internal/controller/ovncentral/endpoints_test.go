package ovncentral

import (
	"testing"
)

func TestDecideEndpoints(t *testing.T) {
	member := func(cip, host string) MemberObservation { return MemberObservation{ClusterIP: cip, HostIP: host} }
	nb := func(ext bool, m ...MemberObservation) DatabaseObservation {
		return DatabaseObservation{Short: "nb", Port: 6641, ExternallyReachable: ext, NodePortBase: 30641, Members: m}
	}
	sb := func(ext bool, m ...MemberObservation) DatabaseObservation {
		return DatabaseObservation{Short: "sb", Port: 6642, ExternallyReachable: ext, NodePortBase: 30651, Members: m}
	}
	tests := []struct {
		name         string
		dbs          []DatabaseObservation
		wantPending  bool
		wantNB       DatabaseAddresses
		wantSBExtern string
	}{
		{
			name: "internal only, in ordinal order",
			dbs: []DatabaseObservation{
				nb(false, member("10.0.0.3", "192.0.2.1"), member("10.0.0.1", "192.0.2.2"), member("10.0.0.2", "192.0.2.3")),
				sb(false, member("10.0.1.1", "192.0.2.1")),
			},
			wantNB: DatabaseAddresses{Internal: "ssl:10.0.0.3:6641,ssl:10.0.0.1:6641,ssl:10.0.0.2:6641"},
		},
		{
			name: "external uses each member's node port",
			dbs: []DatabaseObservation{
				nb(true, member("10.0.0.1", "192.0.2.1"), member("10.0.0.2", "192.0.2.2"), member("10.0.0.3", "192.0.2.3")),
				sb(true, member("10.0.1.1", "192.0.2.9")),
			},
			wantNB: DatabaseAddresses{
				Internal: "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641,ssl:10.0.0.3:6641",
				External: "ssl:192.0.2.1:30641,ssl:192.0.2.2:30642,ssl:192.0.2.3:30643",
			},
			wantSBExtern: "ssl:192.0.2.9:30651",
		},
		{
			name: "a member without a pod is left out of the external list",
			dbs: []DatabaseObservation{
				nb(true, member("10.0.0.1", "192.0.2.1"), member("10.0.0.2", ""), member("10.0.0.3", "192.0.2.3")),
				sb(false, member("10.0.1.1", "")),
			},
			wantNB: DatabaseAddresses{
				Internal: "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641,ssl:10.0.0.3:6641",
				External: "ssl:192.0.2.1:30641,ssl:192.0.2.3:30643",
			},
		},
		{
			name: "IPv6 literals are bracketed",
			dbs: []DatabaseObservation{
				nb(true, member("fd00::1", "2001:db8::1")),
				sb(false, member("fd00::2", "")),
			},
			wantNB: DatabaseAddresses{Internal: "ssl:[fd00::1]:6641", External: "ssl:[2001:db8::1]:30641"},
		},
		{
			name:        "a Service without a cluster IP clears everything",
			dbs:         []DatabaseObservation{nb(false, member("10.0.0.1", "")), sb(false, member("", ""))},
			wantPending: true,
		},
		{
			name:        "a headless answer is no cluster IP",
			dbs:         []DatabaseObservation{nb(false, member("None", "")), sb(false, member("10.0.1.1", ""))},
			wantPending: true,
		},
		{
			name:        "a published database with no member on a node clears everything",
			dbs:         []DatabaseObservation{nb(false, member("10.0.0.1", "")), sb(true, member("10.0.1.1", ""))},
			wantPending: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addrs, pending := DecideEndpoints(tt.dbs)
			if tt.wantPending {
				if pending == "" || addrs != nil {
					t.Fatalf("want nothing published, got %v (pending %q)", addrs, pending)
				}
				return
			}
			if pending != "" {
				t.Fatalf("pending = %q", pending)
			}
			if addrs[0] != tt.wantNB {
				t.Errorf("nb = %+v, want %+v", addrs[0], tt.wantNB)
			}
			if addrs[1].External != tt.wantSBExtern {
				t.Errorf("sb external = %q, want %q", addrs[1].External, tt.wantSBExtern)
			}
		})
	}
}

func TestDecideRelayNodeAddresses(t *testing.T) {
	tests := []struct {
		name  string
		hosts []string
		want  string
	}{
		{"none yet", []string{"", ""}, ""},
		{"deduplicated and numerically sorted", []string{"10.0.0.10", "10.0.0.9", "10.0.0.10", ""}, "ssl:10.0.0.9:30661,ssl:10.0.0.10:30661"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRelayNodeAddresses(tt.hosts, 30661); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAddressesUsePort(t *testing.T) {
	tests := []struct {
		list string
		port int32
		want bool
	}{
		{"", 30661, true},
		{"ssl:10.0.0.1:30661,ssl:10.0.0.2:30661", 30661, true},
		{"ssl:10.0.0.1:30661,ssl:10.0.0.2:30662", 30661, false},
		{"ssl:10.0.0.1:306610", 30661, false},
	}
	for _, tt := range tests {
		if got := AddressesUsePort(tt.list, tt.port); got != tt.want {
			t.Errorf("AddressesUsePort(%q, %d) = %v, want %v", tt.list, tt.port, got, tt.want)
		}
	}
}
