package monitoring_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// dashboardFile is the key of the dashboard in its ConfigMap.
const dashboardFile = "anvil-operator.json"

// panel is the part of a Grafana panel the test reads; rows nest panels.
type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboard is the part of the dashboard the test reads.
type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// renderedDashboard renders the chart with the monitoring values and
// decodes the dashboard of its sidecar ConfigMap.
func renderedDashboard(t *testing.T) dashboard {
	t.Helper()
	var found []object
	for _, o := range ofKind(objects(t, helmTemplate(t, monitoringValues...)), "ConfigMap") {
		if o.Metadata.Labels["grafana_dashboard"] == "1" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ConfigMaps labelled grafana_dashboard: \"1\", want 1", len(found))
	}
	var d dashboard
	if err := json.Unmarshal([]byte(found[0].Data[dashboardFile]), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	return d
}

// grafanaVariables are Grafana's interval variables, which PromQL does not
// know; a value of the same kind stands in for them. Label variables sit
// in regular expressions, where PromQL takes them as they are.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// labelValues matches a templating query label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// queries lists every PromQL expression of the dashboard, by where it is.
func (d dashboard) queries() map[string]string {
	out := map[string]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				out[p.Title+" #"+string(rune('A'+i))] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			out["variable "+v.Name] = m[1]
		}
	}
	return out
}

// Every query of the dashboard parses, and every metric it selects is one
// the operator exports, filtered only by labels that metric has: a renamed
// metric or label fails here instead of leaving an empty panel.
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	inv := loadInventory(t)
	d := renderedDashboard(t)
	if d.UID == "" {
		t.Error("the dashboard has no uid; the sidecar would import a copy on every change")
	}
	used := map[string]bool{}
	for where, expr := range d.queries() {
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s: empty query", where)
			continue
		}
		for name := range checkSelectors(t, inv, where, grafanaVariables.Replace(expr)) {
			used[name] = true
		}
	}
	// The panels issue #32 asks for, by the series they read.
	for _, name := range []string{
		"anvil_target_cluster_reachable", "anvil_novacompute_nodes",
		"anvil_novacompute_node_time_to_schedulable_seconds_bucket", "anvil_novacompute_failed_builds",
		"anvil_object_condition", "controller_runtime_reconcile_time_seconds_bucket",
		"controller_runtime_reconcile_errors_total",
	} {
		if !used[name] {
			t.Errorf("no panel reads %s", name)
		}
	}
}

// checkSelectors parses expr and fails for every metric it selects that the
// operator does not export, and for every label it filters on that the
// metric does not have. It returns the metric names it selects.
func checkSelectors(t *testing.T, inv inventory, where, expr string) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	parsed, err := promqlParser.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return used
	}
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		labels, exported := inv.labelsOf(vs.Name)
		if !exported {
			t.Errorf("%s: %q selects %q, which the operator does not export", where, expr, vs.Name)
			return nil
		}
		used[vs.Name] = true
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" && !slices.Contains(labels, m.Name) {
				t.Errorf("%s: %q filters %s on %q, a label it does not have (%v)", where, expr, vs.Name, m.Name, labels)
			}
		}
		return nil
	})
	return used
}
