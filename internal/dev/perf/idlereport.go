package perf

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// OpenStack services as anvil_openstack_requests_total names them, with
// the names the report prints.
var openstackServices = []struct{ label, name string }{
	{"identity", "Keystone"}, {"compute", "Nova"}, {"placement", "Placement"},
}

// Writes is the operator's apiserver writes in the window, over every
// cluster.
func (r *IdleResult) Writes() int { return r.count(testenv.IsWriteVerb) }

// Reads is the operator's gets and lists in the window; a watch is not
// counted, since it is one long request that delivers changes.
func (r *IdleResult) Reads() int {
	return r.count(func(v string) bool { return !testenv.IsWriteVerb(v) && v != "watch" })
}

func (r *IdleResult) count(keep func(verb string) bool) int {
	n := 0
	for _, verbs := range r.Requests {
		for v, c := range verbs {
			if keep(v) {
				n += c
			}
		}
	}
	return n
}

// OpenStack is the operator's requests to one service in the window.
func (r *IdleResult) OpenStack(service string) float64 {
	return r.Counters.Sum(openstackRequests, func(k string) bool { return hasLabel(k, service) })
}

// PerMinute turns a count in the window into a rate.
func (r *IdleResult) PerMinute(n float64) float64 {
	if r.Window <= 0 {
		return 0
	}
	return n / r.Window.Minutes()
}

// rate prints a rate per minute, and per pool when there are pools.
func (r *IdleResult) rate(n float64) string {
	per := r.PerMinute(n)
	if r.Pools <= 0 {
		return fmt.Sprintf("%.1f/min", per)
	}
	return fmt.Sprintf("%.1f/min (%.2f per pool)", per, per/float64(r.Pools))
}

// Rows are P3's lines of the report.
func (r *IdleResult) Rows() []Row {
	scope := fmt.Sprintf("%d settled pools, %s window", r.Pools, r.Window.Round(1e9))
	writes := r.Writes()
	rows := []Row{
		{ID: "P3", What: "apiserver writes by the operator, " + scope, Value: r.rate(float64(writes)), Target: "0", Met: Met(writes == 0)},
		{ID: "P3", What: "apiserver reads (get, list) by the operator", Value: r.rate(float64(r.Reads()))},
	}
	for _, s := range openstackServices {
		rows = append(rows, Row{ID: "P3", What: s.name + " requests by the operator", Value: r.rate(r.OpenStack(s.label))})
	}
	return append(rows, Row{ID: "P3", What: "settled passes of the pools", Value: r.rate(r.passes())})
}

// passes is how many passes the pool controller finished in the window.
func (r *IdleResult) passes() float64 {
	return r.Counters.Sum("controller_runtime_reconcile_total{", func(k string) bool { return hasLabel(k, "novacompute-controller") })
}

// write prints the breakdown behind the rows: requests by cluster and
// verb, by resource, OpenStack requests by service and method, and passes
// by controller.
func (r *IdleResult) write(w io.Writer) {
	for _, c := range slices.Sorted(maps.Keys(r.Requests)) {
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(r.Requests[c])) {
			parts = append(parts, fmt.Sprintf("%s %.1f", v, r.PerMinute(float64(r.Requests[c][v]))))
		}
		fmt.Fprintf(w, "    %s, per minute: %s\n", c, strings.Join(parts, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Resources)) {
		fmt.Fprintf(w, "    %-50s %7.1f/min\n", k, r.PerMinute(float64(r.Resources[k])))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Counters)) {
		if strings.HasPrefix(k, openstackRequests) || strings.HasPrefix(k, "controller_runtime_reconcile_total{") {
			fmt.Fprintf(w, "    %-70s %7.1f/min\n", k, r.PerMinute(r.Counters[k]))
		}
	}
}
