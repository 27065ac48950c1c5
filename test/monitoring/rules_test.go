package monitoring_test

import (
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// promqlParser parses as a default Prometheus does.
var promqlParser = parser.NewParser(parser.Options{})

// renderedRules renders the chart with the monitoring values and parses
// its PrometheusRule's groups as Prometheus parses a rule file, templates
// of the annotations included.
func renderedRules(t *testing.T) []rulefmt.RuleGroup {
	t.Helper()
	rules := ofKind(objects(t, helmTemplate(t, monitoringValues...)), "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(rules))
	}
	spec, err := yaml.Marshal(&rules[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promqlParser, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Errorf("the PrometheusRule does not parse: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	return groups.Groups
}

// alerts lists the rendered alerting rules by name.
func alerts(t *testing.T) map[string]rulefmt.Rule {
	t.Helper()
	out := map[string]rulefmt.Rule{}
	for _, g := range renderedRules(t) {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s has a recording rule %s; the tests know only alerts", g.Name, r.Record)
				continue
			}
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// Every alert links a runbook page that exists, and every page is linked:
// a renamed alert or a deleted page fails here.
func TestAlertsLinkExistingRunbooks(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "docs", "runbooks")
	linked := map[string]bool{}
	for name, r := range alerts(t) {
		url := r.Annotations["runbook_url"]
		page, ok := strings.CutPrefix(url, runbookBase+"/")
		if !ok || page != name+".md" {
			t.Errorf("alert %s: runbook_url %q, want %s/%s.md", name, url, runbookBase, name)
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Errorf("alert %s: %v", name, err)
			continue
		}
		linked[page] = true
		// A runbook says what the alert means, how to confirm it and how
		// to fix it.
		for _, heading := range []string{"## Meaning", "## Confirm", "## Fix"} {
			if !strings.Contains(string(raw), "\n"+heading+"\n") {
				t.Errorf("runbook %s has no %q section", page, heading)
			}
		}
		for _, key := range []string{"summary", "description"} {
			if r.Annotations[key] == "" {
				t.Errorf("alert %s has no %s", name, key)
			}
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", name, s)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" && !linked[e.Name()] {
			t.Errorf("runbook %s is linked by no alert", e.Name())
		}
	}
}

// Every alert selects only metrics the operator exports, by labels they
// have; the scenarios then show that the selection means what it should.
func TestAlertsNameExportedMetrics(t *testing.T) {
	inv := loadInventory(t)
	for name, r := range alerts(t) {
		checkSelectors(t, inv, "alert "+name, r.Expr)
	}
}

// The job placeholder of files/prometheus-rules.yaml is replaced by the
// metrics Service's name, or by the job the values name.
func TestAlertsFilterTheOperatorsJob(t *testing.T) {
	for _, tc := range []struct {
		want string
		args []string
	}{
		{job, monitoringValues},
		{"custom", append(slices.Clone(monitoringValues), "--set", "monitoring.prometheusRule.job=custom")},
	} {
		manifest := helmTemplate(t, tc.args...)
		if strings.Contains(manifest, "ANVIL_JOB") {
			t.Errorf("job %s: the placeholder is left in the rules", tc.want)
		}
		if !strings.Contains(manifest, `job="`+tc.want+`"`) {
			t.Errorf("job %s: no rule filters on it", tc.want)
		}
	}
}

// newEngine returns a PromQL engine with Prometheus's default lookback.
func newEngine(t *testing.T) *promql.Engine {
	t.Helper()
	ng := promql.NewEngine(promql.EngineOpts{
		MaxSamples:    1_000_000,
		Timeout:       time.Minute,
		LookbackDelta: 5 * time.Minute,
		Parser:        promqlParser,
	})
	t.Cleanup(func() { _ = ng.Close() })
	return ng
}

// results evaluates expr at instant at and returns the label sets of the
// series it yields.
func results(t *testing.T, ng *promql.Engine, s *store, expr string, at time.Time) []string {
	t.Helper()
	q, err := ng.NewInstantQuery(t.Context(), s, nil, expr, at)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer q.Close()
	res := q.Exec(t.Context())
	if res.Err != nil {
		t.Fatalf("%s at %s: %v", expr, at, res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	out := make([]string, 0, len(v))
	for _, smp := range v {
		out = append(out, smp.Metric.String())
	}
	return out
}

// firing evaluates an alert as Prometheus's rule manager would, every
// step from the first hour's end (range selectors have their window by
// then) to end, and returns the label sets that were pending for the
// rule's for duration at some step, with the last step at which each was
// firing. A for of 0 fires on the first result.
func firing(t *testing.T, ng *promql.Engine, s *store, rule rulefmt.Rule, end time.Time) map[string]time.Time {
	t.Helper()
	forDur := time.Duration(rule.For)
	step := min(max(forDur/60, 30*time.Second), time.Minute)
	since := map[string]time.Time{}
	fired := map[string]time.Time{}
	for at := epoch.Add(time.Hour); !at.After(end); at = at.Add(step) {
		now := map[string]bool{}
		for _, ls := range results(t, ng, s, rule.Expr, at) {
			now[ls] = true
			if _, ok := since[ls]; !ok {
				since[ls] = at
			}
			if at.Sub(since[ls]) >= forDur {
				fired[ls] = at
			}
		}
		// A series that left the result is no longer pending.
		for ls := range since {
			if !now[ls] {
				delete(since, ls)
			}
		}
	}
	return fired
}

// Each alert fires on series that describe its problem, at the series'
// end, and never on a healthy fleet, for blips shorter than its for
// duration included. The series carry the names and labels the operator
// exports, so a renamed metric or label fails here.
func TestAlertsFireOnTheirProblemOnly(t *testing.T) {
	inv := loadInventory(t)
	all := alerts(t)
	for name := range all {
		if _, ok := scenarios[name]; !ok {
			t.Errorf("alert %s has no scenario; add one to scenarios", name)
		}
	}
	ng := newEngine(t)
	for name, sc := range scenarios {
		rule, ok := all[name]
		if !ok {
			t.Errorf("scenario %s names no rendered alert", name)
			continue
		}
		// The series run an hour, then the for window, then an hour more.
		span := time.Duration(rule.For) + 2*time.Hour
		end := epoch.Add(span)
		t.Run(name+"/fires", func(t *testing.T) {
			s := newStore(t, inv, span)
			sc.firing(s, span)
			fired := firing(t, ng, s, rule, end)
			if len(fired) != 1 {
				t.Fatalf("fired for %v, want exactly one series, the one with the problem", fired)
			}
			for ls, last := range fired {
				if end.Sub(last) > time.Minute {
					t.Errorf("%s stopped firing at %s, before the problem ended", ls, last.Format(time.RFC3339))
				}
			}
		})
		t.Run(name+"/healthy", func(t *testing.T) {
			s := newStore(t, inv, span)
			sc.healthy(s, span)
			if fired := firing(t, ng, s, rule, end); len(fired) > 0 {
				t.Fatalf("fired on a healthy fleet: %v", fired)
			}
		})
	}
}

// constant returns a series value that never changes.
func constant(v float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return v }
}

// perSecond returns a counter growing by rate each second.
func perSecond(rate float64) func(time.Duration) float64 {
	return func(since time.Duration) float64 { return math.Floor(rate * since.Seconds()) }
}
