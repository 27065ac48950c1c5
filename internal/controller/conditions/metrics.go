package conditions

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// conditionDesc is the one series family of every Anvil object's
// conditions: 1 on the series of the condition's current status, 0 on the
// two others, so alerts can test `== 1` and dashboards can sum. The reason
// is a label too, so an alert can tell one cause from another; reasons are
// documented constants, so its values stay few.
var conditionDesc = prometheus.NewDesc("anvil_object_condition",
	"Conditions of every Anvil object: 1 for the condition's current status, 0 for the other two; reason is the condition's.",
	[]string{"kind", "namespace", "name", "type", "status", "reason"}, nil)

// statuses are the values a condition's status label takes.
var statuses = []string{"True", "False", "Unknown"}

// collector reads the objects from the manager's cache at scrape time, so
// a deleted object's series go with it and a restart needs no state.
type collector struct {
	mu     sync.Mutex
	reader client.Reader
	scheme *runtime.Scheme
	lists  []client.ObjectList
}

// exported is registered once for the process; ExportFrom points it at the
// running manager.
var exported = &collector{}

func init() { metrics.Registry.MustRegister(exported) }

// ExportFrom makes anvil_object_condition report the objects of lists,
// read through reader (the manager's cache). Until it is called the family
// is described but empty.
func ExportFrom(reader client.Reader, scheme *runtime.Scheme, lists ...client.ObjectList) {
	exported.mu.Lock()
	defer exported.mu.Unlock()
	exported.reader, exported.scheme, exported.lists = reader, scheme, lists
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- conditionDesc }

// Collect implements prometheus.Collector. A list the cache cannot serve
// is skipped: a scrape never fails on one kind.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, scheme, lists := c.reader, c.scheme, c.lists
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, proto := range lists {
		list := proto.DeepCopyObject().(client.ObjectList)
		if err := reader.List(ctx, list); err != nil {
			continue
		}
		_ = apimeta.EachListItem(list, func(o runtime.Object) error {
			emitConditions(ch, scheme, o)
			return nil
		})
	}
}

// emitConditions sends one object's series.
func emitConditions(ch chan<- prometheus.Metric, scheme *runtime.Scheme, o runtime.Object) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return
	}
	conds, _, _ := unstructured.NestedSlice(content, "status", "conditions")
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		typ, _ := cond["type"].(string)
		current, _ := cond["status"].(string)
		reason, _ := cond["reason"].(string)
		for _, s := range statuses {
			v := 0.0
			if s == current {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, v, gvk.Kind, obj.GetNamespace(), obj.GetName(), typ, s, reason)
		}
	}
}
