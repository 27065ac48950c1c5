package novacompute_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/workload"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// idlePasses is how many settled passes the quiet window of
// testSettledWritesNothing spans; it lasts at least that many of the
// pool's settled requeues, poolResync each.
const idlePasses = 3

// testSettledWritesNothing proves that a settled Anvil writes nothing. It
// runs inside TestIntegrationPool once the traits are applied, so the
// system it watches is that suite's: the ControlPlane whose contract is
// mirrored onto compute-a and pool-a Ready on two nodes of the real Nova,
// with traits, so the Hypervisors are read on every pass too. A test of
// its own would set up a second ControlPlane, Nova and nova-compute for
// the same proof, and wait on the suite's shared Nova to do so. While the
// pool passes at least idlePasses times, the apiservers of mgmt and
// compute-a must record no write request of the operator.
//
// The writes are counted where they land, in each apiserver's audit log
// (testenv.Options.Audit), not by the operator. Every client of the
// operator, the manager's and the registry's for compute clusters, sends
// the user agent testenv.OperatorUserAgent, which no other client in this
// binary sends: the test's own clients use Go's default one, the pod
// runners, controller manager, scheduler and kwok their own. So a write
// with that user agent is the operator's, events it records included, and
// what the node and pod heartbeats write is not counted. That the
// identification works is checked too: the operator's writes since the
// suite began, from setupMarks, must show up on both clusters.
//
// The passes are counted by controller-runtime's reconcile counter: each
// settled pass ends asking for its next one, after the pool's resync. Here the
// pod runner's Node heartbeats also start passes, since virtual-kubelet
// keeps its last status in a Node annotation; the window lasts at least
// idlePasses settled requeues either way.
//
// An event recorded on every pass since convergence escapes the window:
// the events API turns repeats into a series on the client and patches it
// only every 30 minutes. Such series are logged.
func testSettledWritesNothing(t *testing.T, e *testenv.Environment, compute *testenv.Cluster, setupMarks []int64) {
	clusters := []*testenv.Cluster{e.Management, compute}
	waitSettled(t, e, compute)

	// The operator's writes so far prove it is told apart in the logs.
	for i, c := range clusters {
		writes, _, err := c.AuditWrites(setupMarks[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(testenv.OperatorWrites(writes)) == 0 {
			t.Fatalf("the audit log of %s holds no write with user agent %q while the pool converged: the operator's requests are not identified",
				c.Name, testenv.OperatorUserAgent)
		}
	}
	quiet(t, clusters)

	// The window: at least idlePasses settled passes, and as long.
	before, _ := getPool(t.Context(), e, "pool-a")
	passes0, errors0, tokens0 := reconcileTotal(t, "requeue_after"), reconcileTotal(t, "error"), tokenRequests(t)
	osWrites0 := openStackWrites(t)
	marks := auditMarks(t, clusters)
	windowStart := time.Now()
	eventually(t, idlePasses*poolResync+3*time.Minute, fmt.Sprintf("%d settled passes", idlePasses), func(context.Context) (bool, string) {
		passes := reconcileTotal(t, "requeue_after") - passes0
		elapsed := time.Since(windowStart)
		return passes >= idlePasses && elapsed > idlePasses*poolResync+5*time.Second,
			fmt.Sprintf("%v passes in %s", passes, elapsed.Round(time.Second))
	})
	window := time.Since(windowStart)
	passes, failed := reconcileTotal(t, "requeue_after")-passes0, reconcileTotal(t, "error")-errors0
	var offending []string
	for i, c := range clusters {
		writes, _, err := c.AuditWrites(marks[i])
		if err != nil {
			t.Fatal(err)
		}
		ops := testenv.OperatorWrites(writes)
		t.Logf("%s: %d writes in the window, %d by the operator", c.Name, len(writes), len(ops))
		if len(ops) > 0 {
			offending = append(offending, fmt.Sprintf("%s (%d):\n%s%s", c.Name, len(ops), testenv.FormatAuditEvents(ops), describeEvents(t, c, ops)))
		}
	}
	t.Logf("window %s: %v settled passes, %v failed passes", window.Round(time.Second), passes, failed)
	if failed > 0 {
		t.Errorf("%v passes failed in the window; a settled pool's passes succeed", failed)
	}
	// Its passes reuse one Keystone token: the session cache renews it
	// only as it nears expiry, an hour away.
	if tokens := tokenRequests(t) - tokens0; tokens > 0 {
		t.Errorf("the operator asked Keystone for %v tokens in the window; a settled pool reuses its token", tokens)
	}
	if writes := openStackWrites(t) - osWrites0; writes > 0 {
		t.Errorf("the operator sent %v writing requests to OpenStack in the window; a settled pool only reads", writes)
	}
	after, err := getPool(t.Context(), e, "pool-a")
	if err != nil {
		t.Fatal(err)
	}
	if c, seen := conditionOf(after, anvilmeta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the pool left Ready in the window: %s", seen)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the pool changed in the window: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
	logRecurringEvents(t, e)
	if len(offending) > 0 {
		t.Errorf("a settled operator wrote during %d settled passes (%s):\n%s", int(passes), window.Round(time.Second), strings.Join(offending, "\n"))
	}
}

// waitSettled waits until everything the window watches has converged:
// pool-a Ready on its current generation with both nodes Active and its
// traits applied, its DaemonSet rolled out, the ControlPlane Ready and its
// mirror on compute-a.
func waitSettled(t *testing.T, e *testenv.Environment, compute *testenv.Cluster) {
	t.Helper()
	eventually(t, 6*time.Minute, "pool-a settled", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, "pool-a")
		if err != nil {
			return false, err.Error()
		}
		ready, seen := conditionOf(p, anvilmeta.ReadyCondition)
		traits, seenTraits := conditionOf(p, novav1alpha1.TraitsReadyCondition)
		ok := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == p.Generation &&
			traits != nil && traits.Reason == novav1alpha1.TraitsAppliedReason
		for _, n := range []string{nodeA1, nodeA2} {
			en := nodeEntry(p, n)
			ok = ok && en != nil && en.Phase == novav1alpha1.NodeActive && en.ServiceState == "up"
		}
		return ok, fmt.Sprintf("%s; %s; pods: %s", seen, seenTraits, podStates(t, compute, "pool-a"))
	})
	eventually(t, 2*time.Minute, "pool-a's DaemonSet rolled out", func(context.Context) (bool, string) {
		ds := daemonSet(t, compute, "pool-a")
		done, _ := workload.DaemonSetRolledOut(ds)
		return done, fmt.Sprintf("%+v", ds.Status)
	})
	eventually(t, 2*time.Minute, "the ControlPlane Ready with its mirror on compute-a", func(ctx context.Context) (bool, string) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cpName}, cp); err != nil {
			return false, err.Error()
		}
		mirror := &corev1.Secret{}
		err := compute.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: novaName + novav1alpha1.ComputeConfigSuffix}, mirror)
		if err != nil {
			return false, "mirror: " + err.Error()
		}
		ready := apimeta.FindStatusCondition(cp.Status.Conditions, anvilmeta.ReadyCondition)
		if ready == nil {
			return false, "ControlPlane Ready absent"
		}
		return ready.Status == metav1.ConditionTrue && mirror.Labels[c5c3v1alpha1.ComputeConfigMirrorLabel] == "true",
			fmt.Sprintf("ControlPlane Ready=%s %s: %s; mirror labels %v", ready.Status, ready.Reason, ready.Message, mirror.Labels)
	})
}

// quiet waits, for at most two settled requeues, until the operator has
// written nothing for 15 s, so that the window starts after the last
// write of convergence (the status that reports Ready, an event about
// it). A system that never goes quiet goes on to the window, which
// reports what it writes.
func quiet(t *testing.T, clusters []*testenv.Cluster) {
	t.Helper()
	const span = 15 * time.Second
	marks := auditMarks(t, clusters)
	last := time.Now()
	deadline := last.Add(2 * poolResync)
	var seen []string
	for time.Now().Before(deadline) && time.Since(last) < span {
		time.Sleep(time.Second)
		for i, c := range clusters {
			writes, next, err := c.AuditWrites(marks[i])
			if err != nil {
				t.Fatal(err)
			}
			marks[i] = next
			for _, w := range testenv.OperatorWrites(writes) {
				last = time.Now()
				seen = append(seen, c.Name+": "+w.String())
			}
		}
	}
	if len(seen) > 0 {
		t.Logf("the operator's writes after it settled, before the window:\n  %s", strings.Join(seen, "\n  "))
	}
	if time.Since(last) < span {
		t.Logf("the operator did not go quiet for %s within %s", span, 2*poolResync)
	}
}

// describeEvents names what the events among writes are about, from the
// events themselves: reason, action, regarding and related object, and the
// series count. It never prints a note.
func describeEvents(t *testing.T, c *testenv.Cluster, writes []testenv.AuditEvent) string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for _, w := range writes {
		key := w.Namespace + "/" + w.Name
		if w.Resource != "events" || seen[key] {
			continue
		}
		seen[key] = true
		ev := &eventsv1.Event{}
		if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, ev); err != nil {
			out = append(out, fmt.Sprintf("  event %s: %v", key, err))
			continue
		}
		count := int32(1)
		if ev.Series != nil {
			count = ev.Series.Count
		}
		related := ""
		if r := ev.Related; r != nil {
			related = ", related " + r.Kind + " " + r.Name
		}
		out = append(out, fmt.Sprintf("  event %s: %s %s %s, regarding %s %s%s, count %d",
			key, ev.Type, ev.Reason, ev.Action, ev.Regarding.Kind, ev.Regarding.Name, related, count))
	}
	if len(out) == 0 {
		return ""
	}
	return "\n" + strings.Join(out, "\n")
}

// logRecurringEvents logs the events about the settled objects that recurred.
// The events API folds a repeat into a series on the client: the apiserver
// sees the second occurrence as a patch, and later ones only every 30
// minutes. An event recorded on every pass since convergence is therefore
// invisible to the window; a series here points at one.
func logRecurringEvents(t *testing.T, e *testenv.Environment) {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := e.Management.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.Series == nil || !slices.Contains([]string{"pool-a", cpName, novaName}, ev.Regarding.Name) {
			continue
		}
		t.Logf("event %s recurred: %s %s %s, regarding %s %s, count %d, last seen %s", ev.Name, ev.Type, ev.Reason, ev.Action,
			ev.Regarding.Kind, ev.Regarding.Name, ev.Series.Count, ev.Series.LastObservedTime.Format(time.TimeOnly))
	}
}

// auditMarks returns the current end of each cluster's audit log.
func auditMarks(t *testing.T, clusters []*testenv.Cluster) []int64 {
	t.Helper()
	marks := make([]int64, len(clusters))
	for i, c := range clusters {
		m, err := c.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		marks[i] = m
	}
	return marks
}

// reconcileTotal returns how many passes of the pool controller ended with
// result (success, error, requeue or requeue_after), from
// controller-runtime's own counter.
func reconcileTotal(t *testing.T, result string) float64 {
	t.Helper()
	return counterTotal(t, "controller_runtime_reconcile_total", map[string]string{"controller": "novacompute-controller", "result": result})
}

// counterTotal sums a counter of the operator's registry over the series
// whose labels include want.
func counterTotal(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// openStackWrites counts the operator's writing requests to Nova and
// Placement so far: every method but GET and HEAD.
func openStackWrites(t *testing.T) float64 {
	t.Helper()
	var n float64
	for _, service := range []string{"compute", "placement"} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			n += counterTotal(t, "anvil_openstack_requests_total", map[string]string{"service": service, "method": method})
		}
	}
	return n
}

// tokenRequests counts the operator's Keystone authentications so far.
func tokenRequests(t *testing.T) float64 {
	t.Helper()
	return counterTotal(t, "anvil_openstack_requests_total", map[string]string{"service": "identity", "method": "POST"})
}
