package perf

import (
	"strings"
	"testing"
	"time"
)

func TestIdleResultCounts(t *testing.T) {
	r := &IdleResult{
		Pools:  2,
		Window: 2 * time.Minute,
		Requests: map[string]map[string]int{
			"mgmt":      {"get": 6, "watch": 1},
			"compute-a": {"get": 10, "list": 4, "patch": 2},
		},
		Counters: Counters{
			"anvil_openstack_requests_total{GET,compute}":                              8,
			"anvil_openstack_requests_total{PUT,placement}":                            4,
			"anvil_openstack_requests_total{POST,identity}":                            1,
			"controller_runtime_reconcile_total{novacompute-controller,requeue_after}": 4,
			"controller_runtime_reconcile_total{nova-controller,success}":              3,
		},
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"writes are patches, creates, updates and deletes", float64(r.Writes()), 2},
		{"reads are gets and lists, not watches", float64(r.Reads()), 20},
		{"Nova", r.OpenStack("compute"), 8},
		{"Placement", r.OpenStack("placement"), 4},
		{"Keystone", r.OpenStack("identity"), 1},
		{"passes of the pool controller only", r.passes(), 4},
		{"per minute", r.PerMinute(8), 4},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	rows := r.Rows()
	if len(rows) != 6 {
		t.Fatalf("got %d rows, want 6", len(rows))
	}
	if rows[0].Verdict() != "MISSED" || !strings.Contains(rows[0].Value, "1.0/min (0.50 per pool)") {
		t.Errorf("the writes row = %+v, want 1.0/min (0.50 per pool), MISSED", rows[0])
	}
	if rows[3].Value != "4.0/min (2.00 per pool)" {
		t.Errorf("the Nova row's value = %q", rows[3].Value)
	}
}

func TestIdleResultWithoutWindow(t *testing.T) {
	r := &IdleResult{}
	if got := r.PerMinute(5); got != 0 {
		t.Errorf("PerMinute without a window = %v, want 0", got)
	}
	if rows := r.Rows(); rows[0].Verdict() != "met" || rows[0].Value != "0.0/min" {
		t.Errorf("the writes row of an empty result = %+v", rows[0])
	}
}

func TestIsP3Name(t *testing.T) {
	for _, tc := range []struct {
		name, prefix string
		want         bool
	}{
		{"hv23205-p3-29", "hv", true},
		{"az23205-p3-1", "az", true},
		{"hv23205-1", "hv", false},
		{"hv2320x-p3-29", "hv", false},
		{"az23205-p3-1", "hv", false},
		{"tenant_filter_tests", "az", false},
		{"hv", "hv", false},
	} {
		if got := isP3Name(tc.name, tc.prefix); got != tc.want {
			t.Errorf("isP3Name(%q, %q) = %v, want %v", tc.name, tc.prefix, got, tc.want)
		}
	}
}
