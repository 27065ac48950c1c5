package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novadb"
)

// managementCluster is the CLUSTER column of a pool without
// targetClusterRef.
const managementCluster = "management"

// hostRow is one line of the failed-builds table.
type hostRow struct {
	Host string
	// FailedBuilds is nil for a host with a service but no compute_nodes
	// row yet.
	FailedBuilds *int32
	Pool         string
	Cluster      string
	Zone         string
	// Service is nil for a host whose nova-compute service is gone.
	Service *novadb.Service
}

// poolHost is where a pool holds a node.
type poolHost struct {
	pool, cluster, zone string
}

// poolHosts maps each node a pool of the Nova holds to its pool. A
// Conflict entry is another pool's node and is skipped.
func poolHosts(pools []novav1alpha1.NovaCompute) map[string]poolHost {
	out := map[string]poolHost{}
	for i := range pools {
		p := &pools[i]
		cluster := cmp.Or(p.TargetClusterName(), managementCluster)
		for _, n := range p.Status.Nodes {
			if n.Phase != novav1alpha1.NodeConflict {
				out[n.Name] = poolHost{pool: p.Name, cluster: cluster, zone: n.Zone}
			}
		}
	}
	return out
}

// buildRows joins the counters, the services and the pools by host: every
// host that has a compute_nodes row or a nova-compute service. The worst
// host comes first; ties go by name.
func buildRows(counts map[string]int32, services map[string]novadb.Service, pools map[string]poolHost) []hostRow {
	hosts := map[string]bool{}
	for h := range counts {
		hosts[h] = true
	}
	for h := range services {
		hosts[h] = true
	}
	rows := make([]hostRow, 0, len(hosts))
	for h := range hosts {
		row := hostRow{Host: h, Pool: "-", Cluster: "-"}
		if n, ok := counts[h]; ok {
			row.FailedBuilds = &n
		}
		if s, ok := services[h]; ok {
			row.Service = &s
		}
		if p, ok := pools[h]; ok {
			row.Pool, row.Cluster, row.Zone = p.pool, p.cluster, p.zone
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b hostRow) int {
		return cmp.Or(cmp.Compare(count(b), count(a)), cmp.Compare(a.Host, b.Host))
	})
	return rows
}

// count is a row's counter, -1 without one, so such rows sort last.
func count(r hostRow) int32 {
	if r.FailedBuilds == nil {
		return -1
	}
	return *r.FailedBuilds
}

// renderTable writes the rows under a header, then the guide's commands
// for the worst host, or placeholders when no host failed a build.
func renderTable(w io.Writer, rows []hostRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "HOST\tFAILED_BUILDS\tPOOL\tCLUSTER\tDISABLED")
	for _, r := range rows {
		failed := "-"
		if r.FailedBuilds != nil {
			failed = strconv.Itoa(int(*r.FailedBuilds))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Host, failed, r.Pool, r.Cluster, disabledColumn(r.Service))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	host, zone := "<host>", "<zone>"
	if len(rows) > 0 && count(rows[0]) > 0 {
		host = rows[0].Host
		zone = cmp.Or(rows[0].Zone, zone)
	}
	_, err := fmt.Fprintf(w, `
Keep builds away from a host while the cause of its failures is open:
  openstack compute service set --disable --disable-reason "builds fail" %[1]s nova-compute
Once the cause is fixed, enable it and reset the counter with one build pinned there:
  openstack compute service set --enable %[1]s nova-compute
  openstack server create unblock --image <image> --flavor <flavor> --network <network> \
    --availability-zone %[2]s:%[1]s --wait
nova-compute writes the counter every 60 seconds; a restart of the node's
nova-compute pod resets it too.
`, host, zone)
	return err
}

// disabledColumn renders a service's state: yes with its reason, no, or -
// without a service.
func disabledColumn(s *novadb.Service) string {
	switch {
	case s == nil:
		return "-"
	case !s.Disabled:
		return "no"
	case s.DisabledReason != "":
		return "yes (" + s.DisabledReason + ")"
	default:
		return "yes"
	}
}
