package ovnintegration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var tenv *testenv.Environment

// TestMain starts a management cluster only: OVN needs no OpenStack.
func TestMain(m *testing.M) {
	// A long suite of the dev tree; make test keeps the OVN central and
	// chassis suites, which run their pods through the same runner.
	os.Exit(testenv.Run(m, testenv.Options{Long: "test-all"}, &tenv))
}

// The runner's nodes: one for the central, one for the chassis.
const (
	centralNode = "ovnit-central-1"
	chassisNode = "ovnit-chassis-1"
	// chassisID is the chassis node's system-id, the common name of its
	// identity.
	chassisID = "7f0c6a52-1b1e-4d0b-9a51-3e0e8d2f4c11"
)

// TestIntegrationOVN runs a central and a chassis by the contract through
// one runner with the OVN mappings and the NodePort forwarder, against the
// cluster's StatefulSet, Deployment and DaemonSet controllers. The steps
// build on each other.
func TestIntegrationOVN(t *testing.T) {
	e := testenv.Require(t, tenv)
	for _, p := range []string{podrunner.OVSDBServerPath, podrunner.OVNNorthdPath, podrunner.OVNControllerPath, podrunner.OVSVswitchdPath, podrunner.LocalConfigSchema} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Debian's OVS and OVN are not installed: %v", err)
		}
	}
	pickNamesAndPorts(t)
	c := e.Management
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := c.StartWorkloads(ctx); err != nil {
		t.Fatal(err)
	}
	r := startRunner(ctx, t, c)
	tls := newPKI(t)
	cl := tls.clientFiles(t)
	createCentralObjects(ctx, t, c, tls)

	leaderOf := testMembers(ctx, t, c, r)
	testNodePorts(ctx, t, c, r, cl)
	testChassis(ctx, t, c, r, cl, tls.chassis)
	testMemberRestart(ctx, t, c, r, leaderOf)
}

// startRunner runs the central's and the chassis's nodes with the OVN
// mappings and the NodePort forwarder until the test ends.
func startRunner(ctx context.Context, t *testing.T, c *testenv.Cluster) *podrunner.Runner {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	r, err := podrunner.New(podrunner.Options{
		Config:           c.Config,
		Nodes:            []podrunner.Node{{Name: centralNode}, {Name: chassisNode}},
		StateDir:         t.TempDir(),
		Images:           append(podrunner.OVNMappings(), podrunner.DefaultImageMap()...),
		ForwardNodePorts: true,
		Logger:           testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(runCtx); err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if err := r.Wait(); err != nil {
			t.Errorf("runner: %v", err)
		}
	})
	return r
}

// createCentralObjects creates the Secrets, the scripts ConfigMap and the
// Services of the central: northbound members reachable from outside,
// the southbound member not yet.
func createCentralObjects(ctx context.Context, t *testing.T, c *testenv.Cluster, tls pki) {
	t.Helper()
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: central + "-nb-server", Namespace: ns}, Data: tls.server},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: central + "-sb-server", Namespace: ns}, Data: tls.server},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: central + "-client", Namespace: ns}, Data: tls.client},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: central + "-central-scripts", Namespace: ns},
			Data: map[string]string{"ovsdb-server.sh": "# the pod runner reads the contract instead\n"}},
		headlessService("nb"), headlessService("sb"),
		memberService("sb", 0, 0),
	}
	for i := range 3 {
		objs = append(objs, memberService("nb", i, nbNodePorts[i]))
	}
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// testMembers starts the databases' StatefulSets and waits for each
// member to run on its own address and for the northbound cluster to
// have a leader. It returns a function that reports a member's Raft
// server ID and whether some member leads.
func testMembers(ctx context.Context, t *testing.T, c *testenv.Cluster, r *podrunner.Runner) func(*corev1.Pod) (string, bool) {
	t.Helper()
	for _, sts := range []client.Object{memberStatefulSet("nb", 3, centralNode), memberStatefulSet("sb", 1, centralNode)} {
		if err := c.Client.Create(ctx, sts); err != nil {
			t.Fatal(err)
		}
	}
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, waitRunning(ctx, t, c, r, fmt.Sprintf("%s-nb-%d", central, i), ""))
	}
	waitRunning(ctx, t, c, r, central+"-sb-0", "")
	for _, p := range pods {
		if want := podrunner.OwnPodAddress(ns, p.Name); p.Status.PodIP != want || p.Status.HostIP != podrunner.HostIP {
			t.Errorf("%s: podIP %s, hostIP %s; want %s, %s", p.Name, p.Status.PodIP, p.Status.HostIP, want, podrunner.HostIP)
		}
	}
	status := func(p *corev1.Pod) string {
		out, _ := exec.Command("ovn-appctl", "-t", r.ContainerDir(p, "ovsdb-server")+"/ovsdb-server.ctl", "cluster/status", "OVN_Northbound").CombinedOutput()
		return string(out)
	}
	leaderOf := func(p *corev1.Pod) (string, bool) {
		s := status(p)
		leader := fieldOf(s, "Leader")
		return fieldOf(s, "Server ID"), strings.Contains(s, "Status: cluster member") && leader != "" && leader != "unknown"
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		leaders := 0
		for _, p := range pods {
			s := status(p)
			if !strings.Contains(s, "Status: cluster member") || strings.Count(s, "ssl:") < 3 {
				return false, nil
			}
			leaders += strings.Count(s, "Role: leader")
		}
		return leaders == 1, nil
	})
	if err != nil {
		t.Fatalf("the northbound cluster elected no leader: %v\n%s\n%s", err, status(pods[0]), logTail(r, pods[1], "ovsdb-server"))
	}
	return leaderOf
}

// testNodePorts reaches the northbound members through their NodePorts,
// starts northd, and switches the southbound member's Service to NodePort
// at run time, as externallyReachable does, to read what northd wrote.
func testNodePorts(ctx context.Context, t *testing.T, c *testenv.Cluster, r *podrunner.Runner, cl []string) {
	t.Helper()
	nb := fmt.Sprintf("--db=ssl:127.0.0.1:%d,ssl:127.0.0.1:%d,ssl:127.0.0.1:%d", nbNodePorts[0], nbNodePorts[1], nbNodePorts[2])
	if out, err := retryCommand(ctx, "ovn-nbctl", append([]string{nb, "--timeout=10"}, append(cl, "ls-add", "sw0")...)...); err != nil {
		t.Fatalf("ovn-nbctl ls-add through the node ports: %v\n%s", err, out)
	}
	if err := c.Client.Create(ctx, northdDeployment(centralNode)); err != nil {
		t.Fatal(err)
	}
	northd := waitLabelled(ctx, t, c, centralLabels("northd"))
	if out, err := retryCommand(ctx, "ovn-nbctl", append([]string{nb, "--timeout=10", "--wait=sb"}, append(cl, "sync")...)...); err != nil {
		t.Fatalf("northd did not sync the southbound: %v\n%s\n%s", err, out, logTail(r, northd, "ovn-northd"))
	}

	sb := "--db=ssl:127.0.0.1:" + strconv.Itoa(int(sbNodePort))
	if out, err := exec.CommandContext(ctx, "ovn-sbctl", append([]string{sb, "--timeout=3"}, append(cl, "list", "SB_Global")...)...).CombinedOutput(); err == nil {
		t.Fatalf("the southbound answers on %d before its Service is a NodePort:\n%s", sbNodePort, out)
	}
	svc := &corev1.Service{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: central + "-sb-0"}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type = corev1.ServiceTypeNodePort
	svc.Spec.Ports[0].NodePort = sbNodePort
	if err := c.Client.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	out, err := retryCommand(ctx, "ovn-sbctl", append([]string{sb, "--timeout=10"}, append(cl, "list", "Datapath_Binding")...)...)
	if err != nil || !strings.Contains(out, `name=sw0`) {
		t.Fatalf("ovn-sbctl list Datapath_Binding through the node port: %v\n%s", err, out)
	}
}

// testChassis runs the chassis's two DaemonSets on the chassis node, with
// the southbound member's cluster IP as the remote, and waits for its
// Chassis row.
func testChassis(ctx context.Context, t *testing.T, c *testenv.Cluster, r *podrunner.Runner, cl []string, identity map[string][]byte) {
	t.Helper()
	// What the chassis's identity Job installs: the node's own key, which
	// the Southbound's role lets write only this chassis's rows.
	dir := filepath.Join(r.NodeDir(chassisNode), "host", filepath.FromSlash(ovnv1alpha1.ChassisIdentityHostPath))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range identity {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: central + "-sb-0"}, svc); err != nil {
		t.Fatal(err)
	}
	remote := "ssl:" + svc.Spec.ClusterIP + ":6642"
	nodes := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: chassis + "-nodes", Namespace: ns},
		Data: map[string]string{chassisNode: "SYSTEM_ID=" + chassisID + "\nGATEWAY=true\n" +
			"BRIDGE_MAPPINGS=physnet1:br-ex\nENCAP_TYPE=geneve\nLEAVING=false\n"},
	}
	if err := c.Client.Create(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Create(ctx, ovsDaemonSet(chassisNode)); err != nil {
		t.Fatal(err)
	}
	ovs := waitLabelled(ctx, t, c, map[string]string{"app.kubernetes.io/component": "ovs"})
	if log := logTail(r, ovs, "host-prepare"); !strings.Contains(log, "modprobe openvswitch geneve") {
		t.Errorf("host-prepare's log does not say modprobe was skipped:\n%s", log)
	}
	if err := c.Client.Create(ctx, controllerDaemonSet(chassisNode, remote)); err != nil {
		t.Fatal(err)
	}
	ctl := waitLabelled(ctx, t, c, map[string]string{"app.kubernetes.io/component": "ovn-controller"})
	sb := "--db=ssl:127.0.0.1:" + strconv.Itoa(int(sbNodePort))
	var out string
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		b, _ := exec.CommandContext(ctx, "ovn-sbctl", append([]string{sb, "--timeout=5"}, append(cl, "show")...)...).CombinedOutput()
		out = string(b)
		return strings.Contains(out, "hostname: "+chassisNode) && strings.Contains(out, podrunner.NodeEncapAddress(chassisNode)), nil
	})
	if err != nil {
		t.Fatalf("no Chassis for %s in the southbound: %v\n%s\n%s", chassisNode, err, out, logTail(r, ctl, "ovn-controller"))
	}
	// The readiness probe of the contract: connected, found through the
	// node's /run/ovn.
	status := exec.CommandContext(ctx, "ovn-appctl", "-t", "ovn-controller", "connection-status")
	status.Env = append(os.Environ(), "OVN_RUNDIR="+r.NodeDir(chassisNode)+"/host/run/ovn")
	if b, err := status.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "connected" {
		t.Errorf("ovn-controller connection-status = %q, %v", b, err)
	}
}

// testMemberRestart deletes a northbound member: the StatefulSet recreates
// it, it gets the same address, and it starts from its claim, which the
// unchanged Raft server ID shows; a member that lost its database would
// join as a new server.
func testMemberRestart(ctx context.Context, t *testing.T, c *testenv.Cluster, r *podrunner.Runner, leaderOf func(*corev1.Pod) (string, bool)) {
	t.Helper()
	name := central + "-nb-1"
	old := &corev1.Pod{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, old); err != nil {
		t.Fatal(err)
	}
	id, _ := leaderOf(old)
	if id == "" {
		t.Fatalf("%s reports no server ID", name)
	}
	if err := c.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	pod := waitRunning(ctx, t, c, r, name, old.UID)
	if pod.Status.PodIP != old.Status.PodIP {
		t.Errorf("the recreated member has address %s, before %s", pod.Status.PodIP, old.Status.PodIP)
	}
	var got string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var ok bool
		got, ok = leaderOf(pod)
		return ok, nil
	})
	if err != nil || got != id {
		t.Fatalf("the recreated member: server ID %q (before %q), in the cluster: %v\n%s", got, id, err, logTail(r, pod, "ovsdb-server"))
	}
}

// waitRunning waits for a pod of that name, other than one with UID
// notUID, to run, and returns it.
func waitRunning(ctx context.Context, t *testing.T, c *testenv.Cluster, r *podrunner.Runner, name string, notUID types.UID) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && pod.UID != notUID, nil
	})
	if err != nil {
		t.Fatalf("pod %s did not run: %v; phase %s, statuses %+v\n%s", name, err, pod.Status.Phase, pod.Status.ContainerStatuses, logTail(r, pod, "ovsdb-server"))
	}
	return pod
}

// waitLabelled waits for a running pod with the labels and returns it.
func waitLabelled(ctx context.Context, t *testing.T, c *testenv.Cluster, labels map[string]string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				found = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no running pod with labels %v: %v (logs %v)", labels, err, c.WorkloadLogs())
	}
	return found
}

// retryCommand runs a command until it succeeds or 30 seconds pass, since
// a node port opens a moment after its Service changes.
func retryCommand(ctx context.Context, name string, args ...string) (string, error) {
	var out []byte
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err = exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err == nil || time.Now().After(deadline) {
			return string(out), err
		}
		time.Sleep(time.Second)
	}
}

// pickNamesAndPorts names this run's central and chassis and takes four
// NodePorts of nodePortRange that nothing on this host holds, starting at
// a random offset so that two runs at once rarely try the same ones.
func pickNamesAndPorts(t *testing.T) {
	t.Helper()
	suffix := rand.Uint32() % 0x10000
	central = fmt.Sprintf("ovnit-%04x", suffix)
	chassis = central + "-ch"
	var ports []int32
	start := rand.IntN(nodePortRangeSize)
	for i := 0; i < nodePortRangeSize && len(ports) < 4; i++ {
		p := nodePortRange + (start+i)%nodePortRangeSize
		l, err := net.Listen("tcp", net.JoinHostPort(podrunner.HostIP, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		ports = append(ports, int32(p))
	}
	if len(ports) < 4 {
		t.Fatalf("fewer than 4 free ports in %d-%d on this host", nodePortRange, nodePortRange+nodePortRangeSize-1)
	}
	copy(nbNodePorts[:], ports[:3])
	sbNodePort = ports[3]
}

// fieldOf returns the value of a "Name: value" line of ovn-appctl output.
func fieldOf(s, name string) string {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// logTail returns the end of a container's log, for failures.
func logTail(r *podrunner.Runner, pod *corev1.Pod, container string) string {
	if pod == nil || pod.UID == "" {
		return ""
	}
	data, err := os.ReadFile(r.ContainerLog(pod, container))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
