package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

const (
	// killsEnv sets how many times the kill test kills the operator;
	// make test-chaos sets 50, make test runs the default. One kill keeps
	// the restart, the census and the leak scan in every make test; each
	// further kill adds a convergence of pools on the shared Nova, which
	// the other pool suites wait for.
	killsEnv     = "ANVIL_CHAOS_KILLS"
	defaultKills = 1
	// seedEnv replays a run: its actions and kill delays come from it.
	seedEnv = "ANVIL_CHAOS_SEED"
	// maxKillDelay bounds how long after an action the operator dies.
	maxKillDelay = 8 * time.Second
	// convergeTimeout bounds one convergence: a new pool's first
	// nova-compute and host discovery take the longest.
	convergeTimeout = 6 * time.Minute
)

// TestIntegrationChaosKill kills the operator process with SIGKILL at
// random moments of a churn of pools (create, add a node, take one away,
// delete) and rotations of the contract's metadata secret. After every
// restart the operator must converge: every live pool Ready on exactly its
// nodes, running the contract its cluster's mirror carries, deleted pools
// gone. At the end, every object on every cluster that names an Anvil
// owner has a live one, before and after a full teardown; no object
// Anvil does not own was changed, deleted or written by the operator
// (snapshot and audit log); and no credential reached the operator's log,
// events, annotations or status.
func TestIntegrationChaosKill(t *testing.T) {
	e, takeTenantFilterTests := startStack(t)
	kills := envInt(t, killsEnv, defaultKills)
	seed := uint64(envInt(t, seedEnv, int(time.Now().UnixNano()&0x7fffffffffff)))
	t.Logf("chaos: %d kills, seed %d; replay with %s=%d %s=%d", kills, seed, seedEnv, seed, killsEnv, kills)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	cl, _ := cloud.ForTest(t)
	for _, c := range poolClusters {
		for i := range nodesPerCluster {
			// Their service records go when the test ends, whatever the
			// pools left.
			cl.ComputeService(nodeName(c, i))
		}
	}
	// The census snapshot comes first, before the operator or any input
	// of Anvil's exists.
	plantForeign(t, e)
	snap := snapshotForeign(t, e)
	marks := auditMarks(t, e)

	op := newOperator(t, e, "--pool-resync-interval=10s", "--cluster-probe-interval=1s")
	op.start(t)
	metadata := fmt.Sprintf("cx-metadata-%s-0-%016x", run, rng.Uint64())
	cp := createControlPlane(t, e, "cx"+run, metadata)
	takeTenantFilterTests()
	f := newFleet(e, cp, metadata, rng)
	started := time.Now()
	for _, c := range poolClusters {
		f.create(t, c)
	}
	eventually(t, convergeTimeout+2*time.Minute, "the first pools", f.converged)
	t.Logf("chaos: the first pools converged in %s", time.Since(started).Round(time.Second))

	var times []time.Duration
	for i := range kills {
		what := f.act(t)
		delay := time.Duration(rng.Int64N(int64(maxKillDelay)))
		time.Sleep(delay)
		op.kill(t)
		restarted := time.Now()
		op.start(t)
		eventually(t, convergeTimeout, fmt.Sprintf("convergence after kill %d (%s)", i+1, what), f.converged)
		times = append(times, time.Since(restarted))
		t.Logf("chaos: kill %d/%d %s after %s; converged %s after the restart",
			i+1, kills, delay.Round(time.Millisecond), what, times[i].Round(100*time.Millisecond))
	}
	logDurations(t, "convergence after a restart", times)

	if o := orphans(t, e); len(o) > 0 {
		t.Errorf("orphans with every pool Ready:\n  %s", strings.Join(o, "\n  "))
	}
	f.teardown(t)
	deleteControlPlane(t, e, cp)
	eventually(t, 2*time.Minute, "no orphan after the teardown", func(context.Context) (bool, string) {
		o := orphans(t, e)
		return len(o) == 0, strings.Join(o, "; ")
	})
	checkForeign(t, e, snap, marks)
	testenv.AssertNoLeak(t, append(leakTexts(t, e), op.log(t)), cp.secrets)
	t.Logf("chaos: %d kills over %d incarnations, %d rotations, %d pools created", kills, op.starts, f.rotations, f.created)
}

// checkForeign fails on any snapshotted object that changed or went, and
// on any write of the operator to one.
func checkForeign(t *testing.T, e *testenv.Environment, snap foreignSnapshot, marks map[string]int64) {
	t.Helper()
	if changed := compareForeign(t, e, snap); len(changed) > 0 {
		t.Errorf("objects Anvil does not own changed:\n  %s", strings.Join(changed, "\n  "))
	}
	writes := operatorWrites(t, e, marks)
	if touched := foreignTouches(writes, snap); len(touched) > 0 {
		t.Errorf("the operator wrote objects it does not own:\n  %s", strings.Join(touched, "\n  "))
	}
	total := 0
	for _, w := range writes {
		total += len(w)
	}
	t.Logf("chaos: foreign census: %d objects not Anvil's checked; %d writes of the operator checked against them", len(snap), total)
	if total == 0 {
		t.Error("the audit logs hold no write of the operator: the census cannot tell its writes apart")
	}
}

// foreignNamespace holds foreign objects on every cluster, outside the
// namespace Anvil works in.
const foreignNamespace = "chaos-foreign"

// plantForeign creates objects Anvil must leave alone on every cluster:
// in its own namespace, Secrets and ConfigMaps named like its children
// (one with the mirror label but no owner), and a DaemonSet named like a
// pool's; in another namespace, an object of the mirror's exact name.
func plantForeign(t *testing.T, e *testenv.Environment) {
	t.Helper()
	for _, c := range allClusters(e) {
		if err := c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreignNamespace}}); err != nil {
			t.Fatal(err)
		}
		base := "cx" + run
		objs := []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: base + "-nova-compute-config-old", Namespace: ns,
				Labels: map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true"}}, StringData: map[string]string{"note": "foreign"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: base + "-p1-nova-compute-extra", Namespace: ns}, Data: map[string]string{"note": "foreign"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: base + "-nova-compute-config", Namespace: foreignNamespace}, StringData: map[string]string{"note": "foreign"}},
			foreignDaemonSet(base+"-p0-nova-compute", ns),
			foreignDaemonSet(base+"-p1-nova-compute", foreignNamespace),
		}
		for _, o := range objs {
			if err := c.Client.Create(t.Context(), o); err != nil {
				t.Fatalf("planting %s on %s: %v", o.GetName(), c.Name, err)
			}
		}
	}
}

// foreignDaemonSet is a DaemonSet no node matches, so that it runs no pod.
func foreignDaemonSet(name, namespace string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"anvil-chaos/never": "true"},
					Containers:   []corev1.Container{{Name: "c", Image: "registry.invalid/foreign:1"}},
				},
			},
		},
	}
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not a non-negative integer", name, v)
	}
	return n
}

// envRatio reads a ratio of at least 1 from the environment, or def.
func envRatio(t *testing.T, name string, def float64) float64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r < 1 {
		t.Fatalf("%s=%q is not a number of at least 1", name, v)
	}
	return r
}

// logDurations prints the median and maximum of a series.
func logDurations(t *testing.T, what string, d []time.Duration) {
	t.Helper()
	if len(d) == 0 {
		return
	}
	s := slices.Clone(d)
	slices.Sort(s)
	t.Logf("chaos: %s: median %s, max %s over %d", what, median(s).Round(100*time.Millisecond), s[len(s)-1].Round(100*time.Millisecond), len(s))
}

// median of a sorted series.
func median(s []time.Duration) time.Duration {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
