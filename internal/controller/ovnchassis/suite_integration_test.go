package ovnchassis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/ovnchassis"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

// This is the OVN suite: the central and the chassis, with the real
// kube-controller-manager and scheduler, cert-manager, and pod runners that
// run Debian's OVS and OVN for the pods.

var (
	env  *testenv.Environment
	logs = &testenv.LogBuffer{}
	once sync.Once
)

// Node ports of this suite's centrals start at 32641: away from the
// devstack's 30641, 30651 and 30661, so that a devstack left running never
// answers instead.

// The suite's nodes: three on the management cluster, so the Raft members
// spread, and one hypervisor on compute-a.
var (
	mgmtNodes = []string{"ovn-mgmt-1", "ovn-mgmt-2", "ovn-mgmt-3"}
	hvNode    = "ovn-hv-1"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 1, Audit: true}, &env))
}

// startStack starts, once per package, what makes pods run on both
// clusters (the controller manager, the scheduler, the volume provisioner
// and a pod runner with the OVN mappings, forwarding node ports on the
// management cluster) and the operator, wired as production wires it.
func startStack(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	once.Do(func() {
		ctx := context.Background()
		compute := e.ComputeCluster("compute-a")
		for _, c := range []*testenv.Cluster{e.Management, compute} {
			if err := c.StartWorkloads(ctx); err != nil {
				t.Fatal(err)
			}
		}
		dir, err := env.TempDir("anvil-ovn-suite-")
		if err != nil {
			t.Fatal(err)
		}
		runnerDir = dir
		var nodes []podrunner.Node
		for _, n := range mgmtNodes {
			nodes = append(nodes, podrunner.Node{Name: n})
		}
		startRunner(t, e.Management, filepath.Join(dir, "mgmt"), nodes, true)
		startRunner(t, compute, filepath.Join(dir, "compute-a"), []podrunner.Node{{Name: hvNode}}, false)
		// cert-manager's kind exists before the operator starts, so the
		// central watches its Certificates instead of polling them.
		testenv.StartCertManager(t, e.Management)
		mgr, err := e.NewManager(logs)
		if err != nil {
			t.Fatal(err)
		}
		registry, err := operator.Setup(ctx, mgr, &operator.Options{
			ClustersNamespace: e.ClustersNamespace, EnableWebhooks: true, ClusterProbeInterval: time.Second,
			// testenv registers its compute clusters without a namespaces key.
			AllowClusterWideRegistrations: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := testenv.StartManager(mgr, func() bool {
			_, err := registry.Resolve("compute-a")
			return err == nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	return e
}

// startRunner runs a pod runner for c's nodes with the OVN mappings.
func startRunner(t *testing.T, c *testenv.Cluster, dir string, nodes []podrunner.Node, forward bool) {
	t.Helper()
	r, err := podrunner.New(podrunner.Options{
		Config: c.Config, Nodes: nodes, StateDir: dir, Logger: logr.Discard(),
		Images: append(podrunner.OVNMappings(), podrunner.DefaultImageMap()...), ForwardNodePorts: forward,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// newCentral creates a central on the management cluster with one or three
// members per database, on a CA of its own.
func newCentral(t *testing.T, name string, replicas, nbBase, sbBase int32) *ovnv1alpha1.OVNCentral {
	t.Helper()
	return newCentralIn(t, testenv.WorkloadNamespace, name, replicas, nbBase, sbBase, nil)
}

// newCentralIn is newCentral in any namespace, its certificates from the
// issuer ref or, nil, from its own CA.
func newCentralIn(t *testing.T, namespace, name string, replicas, nbBase, sbBase int32, ref *ovnv1alpha1.IssuerReference) *ovnv1alpha1.OVNCentral {
	t.Helper()
	c := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	c.Spec.TLS.IssuerRef = ref
	for _, db := range []*ovnv1alpha1.OVNDatabaseSpec{&c.Spec.Northbound, &c.Spec.Southbound} {
		db.Replicas = ptr.To(replicas)
	}
	c.Spec.Northbound.NodePortBase, c.Spec.Southbound.NodePortBase = ptr.To(nbBase), ptr.To(sbBase)
	c.Spec.Northd.Replicas = ptr.To[int32](1)
	c.Spec.Backup = &ovnv1alpha1.OVNBackupSpec{Suspend: true}
	if err := env.Management.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(context.Background(), c) })
	return c
}

// waitCentral waits until the central's condition has the reason, and
// returns the central.
func waitCentral(t *testing.T, name, condType, reason string, timeout time.Duration) *ovnv1alpha1.OVNCentral {
	t.Helper()
	c := &ovnv1alpha1.OVNCentral{}
	waitCondition(t, workloadKey(name), c, func() []metav1.Condition { return c.Status.Conditions }, condType, reason, timeout)
	return c
}

// waitChassis waits until the chassis's condition has the reason, and
// returns the chassis.
func waitChassis(t *testing.T, name, condType, reason string, timeout time.Duration) *ovnv1alpha1.OVNChassis {
	t.Helper()
	return waitChassisAt(t, workloadKey(name), condType, reason, timeout)
}

// waitChassisAt is waitChassis for a chassis in any namespace.
func waitChassisAt(t *testing.T, key client.ObjectKey, condType, reason string, timeout time.Duration) *ovnv1alpha1.OVNChassis {
	t.Helper()
	c := &ovnv1alpha1.OVNChassis{}
	waitCondition(t, key, c, func() []metav1.Condition { return c.Status.Conditions }, condType, reason, timeout)
	return c
}

// workloadKey is the key of name in the workload namespace.
func workloadKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: name}
}

// waitCondition reads obj until the condition conds returns has the
// reason for obj's generation.
func waitCondition(t *testing.T, key client.ObjectKey, obj client.Object, conds func() []metav1.Condition, condType, reason string, timeout time.Duration) {
	t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := env.Management.Client.Get(ctx, key, obj); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		last = apimeta.FindStatusCondition(conds(), condType)
		return last != nil && last.Reason == reason && last.ObservedGeneration == obj.GetGeneration(), nil
	})
	if err != nil {
		t.Fatalf("%T %s: %s never became %s (last %+v; Ready %+v)", obj, key, condType, reason, last,
			apimeta.FindStatusCondition(conds(), anvilmeta.ReadyCondition))
	}
}

// clientTLS returns the OVS options that present the identity in the
// Secret secretName of the workload namespace on the management cluster.
func clientTLS(t *testing.T, secretName string) []string {
	t.Helper()
	return ovntest.ClientTLS(t, env.Management.Client, workloadKey(secretName))
}

// leaderOf asks one member, through its address, whether it leads db.
func leaderOf(t *testing.T, tls []string, address, db string) (bool, error) {
	t.Helper()
	q := fmt.Sprintf(`["_Server",{"op":"select","table":"Database","where":[["name","==",%q]],"columns":["leader","connected"]}]`, db)
	out, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, tls...), "--no-leader-only", "--timeout=20", "transact", address, q)...)
	if err != nil {
		return false, err
	}
	var res []struct {
		Rows []struct {
			Leader    bool `json:"leader"`
			Connected bool `json:"connected"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return false, fmt.Errorf("unexpected answer %q: %w", out, err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return false, fmt.Errorf("unexpected answer %q", out)
	}
	if !res[0].Rows[0].Connected {
		return false, fmt.Errorf("member %s is not connected to its cluster", address)
	}
	return res[0].Rows[0].Leader, nil
}

// chassisLabel is the label the suite's chassis select their node by.
var chassisLabel = map[string]string{ovnchassis.ChassisNodeLabel: "true"}

// runnerDir holds the pod runners' state: each node's stand-ins for its
// host paths are below it.
var runnerDir string

// errorf is fmt.Errorf, named for the checks' brevity.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// assertSettledPassWritesNothing touches the given children with an
// annotation of the test's, which brings their owners a pass each, and
// fails if the operator wrote anything on either cluster meanwhile: a
// settled central and chassis find everything as they want it.
func assertSettledPassWritesNothing(t *testing.T, touch map[*testenv.Cluster][]client.Object) {
	t.Helper()
	clusters := []*testenv.Cluster{env.Management, env.ComputeCluster("compute-a")}
	marks := quietMarks(t, clusters)
	for c, objs := range touch {
		for _, obj := range objs {
			patch := []byte(`{"metadata":{"annotations":{"test.anvil.c5c3.io/touched":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
			if err := c.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The owners' passes follow their children's events within a second;
	// the window leaves them several.
	time.Sleep(10 * time.Second)
	for i, c := range clusters {
		writes, _, err := c.AuditWrites(marks[i])
		if err != nil {
			t.Fatal(err)
		}
		if w := testenv.OperatorWrites(writes); len(w) > 0 {
			t.Errorf("a settled pass wrote on %s:\n%s", c.Name, testenv.FormatAuditEvents(w))
		}
	}
}

// settleQuiet is how long the operator must have written nothing before
// a test calls the system settled.
const settleQuiet = 3 * time.Second

// quietMarks waits until the operator has written nothing on any of the
// clusters for settleQuiet, and returns the clusters' audit marks at the
// end of that spell. The condition a test waits for may be written a
// moment before the pass that follows it, and that pass, reading a cache
// that has not seen the write yet, may still try a status patch the
// apiserver refuses; the assertion is about a system that has stopped
// writing. One that never stops fails here.
func quietMarks(t *testing.T, clusters []*testenv.Cluster) []int64 {
	t.Helper()
	marks := make([]int64, len(clusters))
	for i, c := range clusters {
		mark, err := c.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		marks[i] = mark
	}
	ovntest.Eventually(t, time.Minute, "the operator stops writing", func() error {
		time.Sleep(settleQuiet)
		var wrote []testenv.AuditEvent
		for i, c := range clusters {
			writes, next, err := c.AuditWrites(marks[i])
			if err != nil {
				return err
			}
			wrote = append(wrote, testenv.OperatorWrites(writes)...)
			marks[i] = next
		}
		if len(wrote) > 0 {
			return errorf("it wrote:\n%s", testenv.FormatAuditEvents(wrote))
		}
		return nil
	})
	return marks
}
