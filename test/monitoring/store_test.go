package monitoring_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// epoch is when every scenario's series begin; a fixed, recent instant so
// that time() in an expression reads like a real clock.
var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// scrapeInterval is the spacing of the synthetic samples.
const scrapeInterval = 30 * time.Second

// sample is one float sample; the engine reads samples through the
// chunks.Sample interface.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }

// store is an in-memory set of series the PromQL engine can query. Every
// series it takes is checked against the operator's inventory first, so a
// scenario can only describe series the operator really exports.
type store struct {
	t      *testing.T
	inv    inventory
	span   time.Duration
	series []storage.Series
}

// newStore holds series from epoch to epoch+span.
func newStore(t *testing.T, inv inventory, span time.Duration) *store {
	return &store{t: t, inv: inv, span: span}
}

// leader and follower are the instances of two operator replicas.
const (
	leader   = "10.0.0.7:8443"
	follower = "10.0.0.8:8443"
)

// add records a series of the operator's scrape: its labels plus job and
// instance (the leader's), and a value at every scrape, given as a function
// of the time since epoch. A NaN value leaves that scrape out, as a series
// that did not exist yet or any more.
func (s *store) add(name string, lbls map[string]string, value func(since time.Duration) float64) {
	s.addFrom(job, leader, name, lbls, value)
}

// addScrape is add for the scrape of another job: a second operator whose
// controller-runtime metrics the same Prometheus collects.
func (s *store) addScrape(scrapeJob, name string, lbls map[string]string, value func(since time.Duration) float64) {
	s.addFrom(scrapeJob, leader, name, lbls, value)
}

// addFrom records a series scraped from one instance of a job.
func (s *store) addFrom(scrapeJob, instance, name string, lbls map[string]string, value func(since time.Duration) float64) {
	s.t.Helper()
	all := maps.Clone(lbls)
	if all == nil {
		all = map[string]string{}
	}
	all["job"], all["instance"] = scrapeJob, instance
	if err := s.inv.checkSeries(name, all); err != nil {
		s.t.Fatal(err)
	}
	all["__name__"] = name
	var samples []chunks.Sample
	for since := time.Duration(0); since <= s.span; since += scrapeInterval {
		v := value(since)
		if v != v { // NaN: no sample
			continue
		}
		samples = append(samples, sample{t: epoch.Add(since).UnixMilli(), f: v})
	}
	s.series = append(s.series, storage.NewListSeries(labels.FromMap(all), samples))
}

// Querier implements storage.Queryable over the recorded series.
func (s *store) Querier(_, _ int64) (storage.Querier, error) {
	return &storage.MockQuerier{SelectMockFunction: func(sortSeries bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var out []storage.Series
		for _, sr := range s.series {
			if matchesAll(sr.Labels(), ms) {
				out = append(out, sr)
			}
		}
		if sortSeries {
			slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
		}
		return &seriesSet{series: out, i: -1}
	}}, nil
}

func matchesAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

// seriesSet iterates a slice of series.
type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
