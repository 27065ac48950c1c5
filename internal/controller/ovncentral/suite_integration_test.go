package ovncentral_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

// This is the central's own suite: the management cluster with the real
// kube-controller-manager and scheduler, cert-manager, the operator wired
// as production wires it, and a pod runner that runs Debian's ovsdb-server
// and ovn-northd for the central's pods. A compute cluster, compute-a,
// runs its own controller manager and cert-manager but no node: a central
// placed there gets its certificates and children, and its pods never run.

var (
	env  *testenv.Environment
	logs = &testenv.LogBuffer{}
	once sync.Once
)

// The suite's three nodes, so that the Raft members spread.
var mgmtNodes = []string{"ovncentral-mgmt-1", "ovncentral-mgmt-2", "ovncentral-mgmt-3"}

// Node ports of this suite's centrals start at 31741: away from the
// devstack's 30641, 30651 and 30661 and from the 326xx and 327xx of the
// ovnchassis suite and the round trips, which may run on this host at the
// same time, since the pod runner's forwarder binds them on 127.0.0.1.
// The central names start with "oc" for the same reason: a member's
// loopback address is derived from its namespace and pod name.

// computeName is the suite's compute cluster.
const computeName = "compute-a"

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 1}, &env))
}

// startStack starts, once per package, what makes pods run on the
// management cluster (the controller manager, the scheduler, the volume
// provisioner and a pod runner with the OVN mappings that forwards node
// ports), cert-manager, and the operator; on the compute cluster, the
// controller manager, whose garbage collector removes what a deleted
// owner leaves, and cert-manager's kinds, so that the operator watches
// Certificates there from the start.
func startStack(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	once.Do(func() {
		ctx := context.Background()
		compute := e.ComputeCluster(computeName)
		testenv.StartCertManager(t, compute)
		for _, c := range []*testenv.Cluster{e.Management, compute} {
			if err := c.StartWorkloads(ctx); err != nil {
				t.Fatal(err)
			}
		}
		dir, err := env.TempDir("anvil-ovncentral-suite-")
		if err != nil {
			t.Fatal(err)
		}
		var nodes []podrunner.Node
		for _, n := range mgmtNodes {
			nodes = append(nodes, podrunner.Node{Name: n})
		}
		r, err := podrunner.New(podrunner.Options{
			Config: e.Management.Config, Nodes: nodes, StateDir: filepath.Join(dir, "mgmt"), Logger: logr.Discard(),
			Images: append(podrunner.OVNMappings(), podrunner.DefaultImageMap()...), ForwardNodePorts: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// cert-manager's kind exists before the operator starts, so the
		// central watches its Certificates instead of polling them. This
		// first user holds it for the package; each test holds it too.
		testenv.StartCertManager(t, e.Management)
		mgr, err := e.NewManager(logs)
		if err != nil {
			t.Fatal(err)
		}
		registry, err := operator.Setup(ctx, mgr, &operator.Options{
			ClustersNamespace: e.ClustersNamespace, EnableWebhooks: true, ClusterProbeInterval: time.Second,
			// testenv registers its compute cluster without a namespaces key.
			AllowClusterWideRegistrations: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := testenv.StartManager(mgr, func() bool {
			_, err := registry.Resolve(computeName)
			return err == nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	testenv.StartCertManager(t, e.Management)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the operator's log ends with:\n%s", tail(logs.String(), 60))
		}
	})
	return e
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// newCentral creates a central in the workload namespace with replicas
// members per database, one northd, suspended backups and a CA of its own.
func newCentral(t *testing.T, name string, replicas, nbBase, sbBase int32) *ovnv1alpha1.OVNCentral {
	t.Helper()
	return newCentralWith(t, name, replicas, nbBase, sbBase, nil)
}

// newCentralWith is newCentral with a change made before the central is
// created, such as a targetClusterRef, which cannot be added later.
func newCentralWith(t *testing.T, name string, replicas, nbBase, sbBase int32, change func(*ovnv1alpha1.OVNCentral)) *ovnv1alpha1.OVNCentral {
	t.Helper()
	c := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	for _, db := range []*ovnv1alpha1.OVNDatabaseSpec{&c.Spec.Northbound, &c.Spec.Southbound} {
		db.Replicas = ptr.To(replicas)
	}
	c.Spec.Northbound.NodePortBase, c.Spec.Southbound.NodePortBase = ptr.To(nbBase), ptr.To(sbBase)
	c.Spec.Northd.Replicas = ptr.To[int32](1)
	c.Spec.Backup = &ovnv1alpha1.OVNBackupSpec{Suspend: true}
	if change != nil {
		change(c)
	}
	if err := env.Management.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(context.Background(), c) })
	return c
}

// workloadKey is the key of name in the workload namespace.
func workloadKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: name}
}

// waitReady reads the central until Ready is True under AllReady for its
// generation, and returns it.
func waitReady(t *testing.T, name string, timeout time.Duration) *ovnv1alpha1.OVNCentral {
	t.Helper()
	condType, reason := anvilmeta.ReadyCondition, anvilmeta.AllReadyReason
	c := &ovnv1alpha1.OVNCentral{}
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := env.Management.Client.Get(ctx, workloadKey(name), c); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		last = apimeta.FindStatusCondition(c.Status.Conditions, condType)
		return last != nil && last.Reason == reason && last.ObservedGeneration == c.Generation, nil
	})
	if err != nil {
		t.Fatalf("central %s: %s never became %s (last %+v; Ready %+v)", name, condType, reason, last,
			apimeta.FindStatusCondition(c.Status.Conditions, anvilmeta.ReadyCondition))
	}
	return c
}

// clientTLS returns the OVS options that present the identity in the
// Secret secretName of the workload namespace on the management cluster.
func clientTLS(t *testing.T, secretName string) []string {
	t.Helper()
	return ovntest.ClientTLS(t, env.Management.Client, workloadKey(secretName))
}

// errorf is fmt.Errorf, named for the checks' brevity.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// memberState is what one member says about itself in its _Server
// database.
type memberState struct {
	Leader    bool
	Connected bool
	// CID is the Raft cluster's id; members of one cluster share it.
	CID string
	// SID is the member's own server id.
	SID string
}

// stateOf asks one member, through its address, about its database db.
func stateOf(t *testing.T, tls []string, address, db string) (memberState, error) {
	t.Helper()
	q := fmt.Sprintf(`["_Server",{"op":"select","table":"Database","where":[["name","==",%q]],"columns":["leader","connected","cid","sid"]}]`, db)
	out, err := ovntest.OVS(t, "ovsdb-client", append(append([]string{}, tls...), "--no-leader-only", "--timeout=20", "transact", address, q)...)
	if err != nil {
		return memberState{}, err
	}
	var res []struct {
		Rows []struct {
			Leader    bool            `json:"leader"`
			Connected bool            `json:"connected"`
			CID       json.RawMessage `json:"cid"`
			SID       json.RawMessage `json:"sid"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return memberState{}, fmt.Errorf("unexpected answer %q: %w", out, err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return memberState{}, fmt.Errorf("unexpected answer %q", out)
	}
	r := res[0].Rows[0]
	return memberState{Leader: r.Leader, Connected: r.Connected, CID: string(r.CID), SID: string(r.SID)}, nil
}

// oneCluster checks that the members at addresses form one Raft cluster
// of db: every member connected, one cluster id, distinct server ids and
// exactly one leader.
func oneCluster(t *testing.T, tls []string, addresses []string, db string) error {
	t.Helper()
	leaders, cids, sids := 0, map[string]bool{}, map[string]bool{}
	for _, a := range addresses {
		s, err := stateOf(t, tls, a, db)
		if err != nil {
			return err
		}
		if !s.Connected {
			return errorf("member %s of %s is not connected to its cluster", a, db)
		}
		if s.Leader {
			leaders++
		}
		cids[s.CID], sids[s.SID] = true, true
	}
	switch {
	case leaders != 1:
		return errorf("%s has %d leaders among %v", db, leaders, addresses)
	case len(cids) != 1:
		return errorf("%s members %v are in %d clusters", db, addresses, len(cids))
	case len(sids) != len(addresses):
		return errorf("%s members %v have %d server ids", db, addresses, len(sids))
	}
	return nil
}

// memberPods returns the three members' pods of one database ("nb" or
// "sb"), in ordinal order, and fails the test unless each has a pod address.
func memberPods(t *testing.T, central, db string) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range 3 {
		p := &corev1.Pod{}
		if err := env.Management.Client.Get(context.Background(), workloadKey(central+"-"+db+"-"+strconv.Itoa(i)), p); err != nil {
			t.Fatal(err)
		}
		if p.Status.PodIP == "" {
			t.Fatalf("member pod %s has no address", p.Name)
		}
		pods = append(pods, p)
	}
	return pods
}

// podAddresses are the members' own ssl: addresses at port: the pod
// runner gives each member a loopback address of its own, which the test
// dials as a client on the central's cluster would dial the member.
func podAddresses(pods []*corev1.Pod, port int) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, "ssl:"+p.Status.PodIP+":"+strconv.Itoa(port))
	}
	return out
}

// recordStates watches the central from the version c carries and returns
// a function that waits until the watch has delivered the state last, the
// one the test read most recently, ends the watch and returns every state
// written since c, in order. A read may return a state a moment before
// the watch delivers it; without the wait, the record could end short of
// the state the test already saw.
func recordStates(t *testing.T, c *ovnv1alpha1.OVNCentral) func(last *ovnv1alpha1.OVNCentral) []*ovnv1alpha1.OVNCentral {
	t.Helper()
	wc, err := client.NewWithWatch(env.Management.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &ovnv1alpha1.OVNCentralList{}, client.InNamespace(c.Namespace),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: c.ResourceVersion, FieldSelector: "metadata.name=" + c.Name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	from := c.ResourceVersion
	var (
		mu   sync.Mutex
		all  []*ovnv1alpha1.OVNCentral
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*ovnv1alpha1.OVNCentral); ok && ev.Type == watch.Modified {
				mu.Lock()
				all = append(all, got)
				mu.Unlock()
			}
		}
	}()
	recorded := func() []*ovnv1alpha1.OVNCentral {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(all)
	}
	return func(last *ovnv1alpha1.OVNCentral) []*ovnv1alpha1.OVNCentral {
		t.Helper()
		ovntest.Eventually(t, 30*time.Second, "the watch delivers the state the test read", func() error {
			if last.ResourceVersion == from ||
				slices.ContainsFunc(recorded(), func(s *ovnv1alpha1.OVNCentral) bool { return s.ResourceVersion == last.ResourceVersion }) {
				return nil
			}
			return errorf("no state of resourceVersion %s yet", last.ResourceVersion)
		})
		w.Stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the watch did not end")
		}
		return recorded()
	}
}
