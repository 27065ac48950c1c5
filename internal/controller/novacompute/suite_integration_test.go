package novacompute_test

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
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/anvil/anvil/config/crd"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

var (
	env   *testenv.Environment
	cloud *openstacktest.Cloud
	logs  = &testenv.LogBuffer{}
	once  sync.Once
	// run makes node, zone and trait names unique per run, so that a run
	// never meets an earlier run's Nova hosts or aggregates.
	run = fmt.Sprintf("%05d", time.Now().Unix()%100000)
)

// TestMain starts the management cluster, compute-a, compute-b (bare: it
// only holds Node objects whose names collide with compute-a's) and the
// real OpenStack services.
func TestMain(m *testing.M) {
	os.Exit(openstacktest.RunWithNova(&cloud, func() int {
		return testenv.Run(m, testenv.Options{ComputeClusters: 2, Audit: true}, &env)
	}))
}

// The hypervisor nodes of compute-a, registered by a pod runner: two zones,
// and a third node in a zone of its own for the OnDelete pool.
var (
	nodeA1 = "hv" + run + "-1"
	nodeA2 = "hv" + run + "-2"
	nodeC  = "hv" + run + "-3"
	zone1  = "az" + run + "-1"
	zone2  = "az" + run + "-2"
	zone3  = "az" + run + "-3"
)

// poolResync is how often a settled pool polls Nova in these tests: short,
// so that a test can watch several settled passes in seconds.
const poolResync = 10 * time.Second

// startStack runs, once per package, everything the pool needs: the
// controller manager, scheduler and a pod runner on both clusters (the
// discovery Job runs on the management cluster, nova-compute on compute-a),
// the stand-in Hypervisor CRD on compute-a, and the operator's controllers
// and webhooks, wired as production wires them.
func startStack(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	openstacktest.Require(t, cloud)
	once.Do(func() {
		ctx := context.Background()
		compute := e.ComputeCluster("compute-a")
		for _, c := range []*testenv.Cluster{e.Management, compute} {
			if err := c.StartWorkloads(ctx); err != nil {
				t.Fatal(err)
			}
		}
		standIns, err := crd.StandIns()
		if err != nil {
			t.Fatal(err)
		}
		crdScheme := runtime.NewScheme()
		if err := apiextensionsv1.AddToScheme(crdScheme); err != nil {
			t.Fatal(err)
		}
		crdClient, err := client.New(compute.Config, client.Options{Scheme: crdScheme})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range standIns {
			if err := crdClient.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		waitEstablished(t, crdClient, standIns)
		startRunner(t, e.Management, []podrunner.Node{{Name: "mgmt-runner-" + run}})
		startRunner(t, compute, []podrunner.Node{
			{Name: nodeA1, Labels: map[string]string{corev1.LabelTopologyZone: zone1}},
			{Name: nodeA2, Labels: map[string]string{corev1.LabelTopologyZone: zone2}},
			{Name: nodeC, Labels: map[string]string{corev1.LabelTopologyZone: zone3}},
		})

		mgr, err := e.NewManager(logs)
		if err != nil {
			t.Fatal(err)
		}
		registry, err := operator.Setup(ctx, mgr, &operator.Options{
			ClustersNamespace: e.ClustersNamespace, EnableWebhooks: true, ClusterProbeInterval: time.Second, PoolResync: poolResync,
			// A Nova without a ControlPlane (the dollar test's) names the
			// local Keystone, which an operator must then allow by host and
			// port; any other port on 127.0.0.1 stays refused.
			AllowedKeystoneHosts: cloud.KeystoneHosts(t),
			// testenv registers its compute clusters without a namespaces key.
			AllowClusterWideRegistrations: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		err = testenv.StartManager(mgr, func() bool {
			_, errA := registry.Resolve("compute-a")
			_, errB := registry.Resolve("compute-b")
			return errA == nil && errB == nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	return e
}

// startRunner registers nodes on a cluster through a pod runner whose
// processes trust the local Keystone's CA, as a node trusts its cloud's.
func startRunner(t *testing.T, c *testenv.Cluster, nodes []podrunner.Node) {
	t.Helper()
	dir, err := env.TempDir("anvil-pool-runner-")
	if err != nil {
		t.Fatal(err)
	}
	r, err := podrunner.New(podrunner.Options{
		Config: c.Config, Nodes: nodes, StateDir: filepath.Join(dir, c.Name),
		Env:    map[string]string{"REQUESTS_CA_BUNDLE": cloud.Endpoints[localcloud.KeystoneCA]},
		Logger: runnerLogger(c.Name),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The runner lives as long as the test binary; its processes die with
	// it (they carry a parent-death signal).
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitEstablished(t *testing.T, c client.Client, defs []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, d := range defs {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: d.Name}, got); err != nil {
				return false, nil //nolint:nilerr // not there yet
			}
			ok := false
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					ok = true
				}
			}
			if !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal("the stand-in CRDs were not established")
	}
}

// eventually polls cond every 250 ms until it holds, or fails after d with
// what it last saw.
func eventually(t *testing.T, d time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		ok, seen := cond(ctx)
		// A read cut short by the deadline says nothing about the state.
		if ctx.Err() == nil {
			last = seen
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s; last seen: %s", what, d, last)
	}
}

// labelNode sets or removes (value "") the pool label on a node.
func labelNode(t *testing.T, c *testenv.Cluster, node, value string) {
	t.Helper()
	relabel(t, c, node, map[string]string{poolKey: value})
}

// readFile reads a file of the service set's state as a string.
func readFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	return string(raw), err
}

// runnerLogger writes a pod runner's log to $ANVIL_TEST_RUNNER_LOG_DIR, when
// set, to debug a pod that does not come up; otherwise it is discarded.
func runnerLogger(cluster string) logr.Logger {
	dir := os.Getenv("ANVIL_TEST_RUNNER_LOG_DIR")
	if dir == "" {
		return logr.Discard()
	}
	f, err := os.Create(filepath.Join(dir, "podrunner-"+cluster+".log"))
	if err != nil {
		return logr.Discard()
	}
	return zap.New(zap.WriteTo(f), zap.UseDevMode(true))
}
