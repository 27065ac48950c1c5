// Package chaos_test is Anvil's survival suite: the operator runs as a
// process of its own against real apiservers and the real Nova, and the
// tests kill it, churn pools around it and take a compute cluster away,
// then prove that it converges, leaves no orphan, never touches what it
// does not own and leaks no credential. docs/reference/testing.md says how
// to run it and how to replay a failed run.
package chaos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/anvil/anvil/config/crd"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var (
	env   *testenv.Environment
	cloud *openstacktest.Cloud
	stack sync.Once
	// run makes node, zone and object names unique per run, so that a run
	// never meets an earlier run's Nova hosts or aggregates in the shared
	// cloud.
	run = fmt.Sprintf("%05d", time.Now().Unix()%100000)
)

const ns = testenv.WorkloadNamespace

// poolClusters are the compute clusters the kill test's pools live on; the
// third one, compute-c, is the one the dead-cluster test stops.
var poolClusters = []string{"compute-a", "compute-b"}

// nodesPerCluster is how many hypervisor nodes each pool cluster offers the
// churn: each one a pool holds runs a real nova-compute, so the number
// bounds the suite's memory and CPU.
const nodesPerCluster = 3

// TestMain starts the management cluster and three compute clusters, each
// apiserver with an audit log for the foreign-object census, and the real
// OpenStack services with the reference Nova the pools join.
func TestMain(m *testing.M) {
	// The operator under test is a process with a log of its own; the
	// test's clients log nothing.
	ctrllog.SetLogger(logr.Discard())
	// make test leaves the suite to make test-all and make test-chaos; its
	// short versions there are targetcluster's tests of a registration
	// changed while the operator is down and of an unreachable cluster.
	// Nothing is started, not even the reference Nova.
	if testenv.SkipsLongSuites() {
		os.Exit(testenv.Run(m, testenv.Options{Long: "test-chaos"}, &env))
	}
	os.Exit(openstacktest.RunWithNova(&cloud, func() int {
		return testenv.Run(m, testenv.Options{ComputeClusters: 3, Audit: true}, &env)
	}))
}

// startStack runs, once per package, what the pools need besides the
// operator, as the NovaCompute suite does: the controller manager,
// scheduler and a pod runner on the management cluster (it runs the Nova's
// database Jobs and the host discovery Job as real nova-manage) and on the
// pool clusters (their nodes run the pools' nova-compute pods as real
// processes), and the stand-in Hypervisor CRD on every compute cluster.
// It returns the environment and the call that takes the test's hold of
// tenant_filter_tests, which the test makes before its first pool.
func startStack(t *testing.T) (e *testenv.Environment, takeTenantFilterTests func()) {
	t.Helper()
	e = testenv.Require(t, env)
	openstacktest.Require(t, cloud)
	stack.Do(func() {
		ctx := context.Background()
		if err := e.Management.StartWorkloads(ctx); err != nil {
			t.Fatal(err)
		}
		startRunner(t, e.Management, []podrunner.Node{{Name: "cx" + run + "-mgmt"}})
		for _, c := range e.Compute {
			installStandIns(t, c)
		}
		for _, name := range poolClusters {
			c := e.ComputeCluster(name)
			if err := c.StartWorkloads(ctx); err != nil {
				t.Fatal(err)
			}
			startRunner(t, c, runnerNodes(name))
		}
	})
	// The pools' Novas reach the set's Nova, whose tenant_filter_tests
	// one Nova at a time may hold; see ReserveTenantFilterTests. Reserved
	// before the test starts its operator, it is released after that
	// stops; the test takes it before its first pool.
	return e, cloud.ReserveTenantFilterTests(t)
}

// runnerNodes are a pool cluster's hypervisor nodes: unique host names,
// all in one zone of the cluster's own.
func runnerNodes(cluster string) []podrunner.Node {
	nodes := make([]podrunner.Node, 0, nodesPerCluster)
	for i := range nodesPerCluster {
		nodes = append(nodes, podrunner.Node{Name: nodeName(cluster, i), Labels: map[string]string{corev1.LabelTopologyZone: zoneOf(cluster)}})
	}
	return nodes
}

// nodeName is the i-th hypervisor node of a pool cluster, such as
// cx12345-a1; the name is its Nova host name.
func nodeName(cluster string, i int) string {
	return fmt.Sprintf("cx%s-%s%d", run, cluster[len(cluster)-1:], i+1)
}

// zoneOf is the availability zone of a pool cluster's nodes.
func zoneOf(cluster string) string { return "cx" + run + "-az-" + cluster[len(cluster)-1:] }

// startRunner registers nodes on a cluster through a pod runner whose
// processes trust the local Keystone's CA, as a node trusts its cloud's.
// It lives as long as the test binary; its processes die with it.
func startRunner(t *testing.T, c *testenv.Cluster, nodes []podrunner.Node) {
	t.Helper()
	dir, err := env.TempDir("anvil-chaos-runner-")
	if err != nil {
		t.Fatal(err)
	}
	r, err := podrunner.New(podrunner.Options{
		Config: c.Config, Nodes: nodes, StateDir: filepath.Join(dir, c.Name),
		Env: map[string]string{"REQUESTS_CA_BUNDLE": cloud.Endpoints[localcloud.KeystoneCA]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// installStandIns installs the stand-in CRDs of the hypervisor operator on
// a compute cluster and waits until they are established, so that a pool
// finds the Hypervisor kind wherever it lands.
func installStandIns(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	defs, err := crd.StandIns()
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if err := cl.Create(t.Context(), d); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, d := range defs {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKey{Name: d.Name}, got); err != nil || !established(got) {
				return false, nil //nolint:nilerr // not there yet
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the stand-in CRDs on %s were not established", c.Name)
	}
}

func established(d *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// eventually polls cond every 250 ms until it holds, or fails after d with
// what it last saw. The timeout is the only wall-clock bound the suite
// asserts.
func eventually(t *testing.T, d time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		ok, seen := cond(ctx)
		last = seen
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s; last seen: %s", what, d, last)
	}
}
