package metadataintegration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/dev/vmtest"
)

var (
	tenv  *testenv.Environment
	cloud *openstacktest.Cloud
)

// TestMain starts the OpenStack service set, for its Neutron and OVN
// central, and a management cluster for the runner's node.
func TestMain(m *testing.M) {
	// A long suite: the whole metadata path through a real agent in a
	// network namespace takes minutes of two cores. make test keeps the
	// agent's configuration checks (package neutronmetadataagent) and the
	// OVN half of the dev tree (ovnintegration).
	if testenv.SkipsLongSuites() {
		os.Exit(testenv.Run(m, testenv.Options{Long: "test-all"}, &tenv))
	}
	os.Exit(openstacktest.Run(&cloud, func() int {
		return testenv.Run(m, testenv.Options{}, &tenv)
	}))
}

// TestIntegrationMetadataAgent runs a chassis and the OVN metadata agent
// through the pod runner on a node with a network namespace of its own,
// binds a port of the set's real Neutron to that node, plugs a test
// instance for it, and reads http://169.254.169.254/ from the instance:
// the request crosses OVN's userspace datapath, the agent's haproxy and the
// agent, which signs it with the shared secret from its environment. Nova's
// metadata API is a stand-in that records what the agent sent (see
// novaStub). Then the agent is killed; the runner starts it again, clears
// what it left, and the instance reads its metadata again.
func TestIntegrationMetadataAgent(t *testing.T) {
	e := testenv.Require(t, tenv)
	c := openstacktest.Require(t, cloud)
	requireHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suffix := randomHex(t, 3)
	node := "mdit-" + suffix
	// First, so that it runs last: once the chassis is gone for good.
	c.DeleteAgentsAtEnd(t, node)

	stub := startNovaStub(t)
	secret := randomHex(t, 24)
	r := startRunner(ctx, t, e.Management, node)
	_, sb, tlsDir := c.NeutronOVN(t)
	installIdentity(t, r, node, tlsDir)
	createObjects(ctx, t, e.Management, node, secret)
	for _, o := range append([]client.Object{ovsPod(node), controllerPod(node, sb)}, agentObjects(t, node, sb, stub.port)...) {
		if err := e.Management.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	agent := waitContainerRunning(ctx, t, e.Management, r, names("metadata-agent"), "metadata-agent", 0)

	nc, err := c.NetworkClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitAgentAlive(ctx, t, nc, node, "OVN Controller agent")
	instanceID := string(uuid.NewUUID())
	port, netCIDR, metadataIP := createBoundPort(ctx, t, nc, node, suffix, instanceID)
	vm := vmtest.PlugT(t, vmtest.Host{NetNS: r.NodeNetNS(node), OVSDBSocket: r.NodeOVSDBSocket(node)}, vmtest.Port{
		ID: port.ID, MAC: port.MACAddress, IP: port.FixedIPs[0].IPAddress, CIDR: netCIDR, MetadataIP: metadataIP,
	})
	waitFor(ctx, t, "port "+port.ID+" to become ACTIVE", 90*time.Second, func() (bool, string) {
		p, err := ports.Get(ctx, nc, port.ID).Extract()
		if err != nil {
			return false, err.Error()
		}
		return p.Status == "ACTIVE", "status " + p.Status
	})

	readMetadata(ctx, t, r, agent, vm, stub)
	checkSigned(t, stub.last(), instanceID, port, secret)
	checkSecretNowhereElse(t, r, agent, secret)

	// A restarted agent starts clean; without that the userspace datapath
	// would keep a dead port for the network's veth.
	killContainer(t, agent, "metadata-agent")
	agent = waitContainerRunning(ctx, t, e.Management, r, names("metadata-agent"), "metadata-agent", 1)
	readMetadata(ctx, t, r, agent, vm, stub)
	checkSigned(t, stub.last(), instanceID, port, secret)
}

// requireHost skips unless this host can run the test: root, for the
// namespaces and privsep, and the Debian programs.
func requireHost(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the metadata agent and network namespaces need root")
	}
	for _, p := range []string{podrunner.NeutronOVNMetadataAgentPath, podrunner.OVSVswitchdPath, podrunner.OVNControllerPath,
		podrunner.NsenterPath, podrunner.IPPath, "/usr/sbin/haproxy", "/usr/sbin/iptables", "/usr/sbin/ethtool", "/usr/bin/curl"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("a program of the test is not installed (make deps): %v", err)
		}
	}
}

// startRunner runs the node, with a network namespace of its own, until
// the test ends.
func startRunner(ctx context.Context, t *testing.T, c *testenv.Cluster, node string) *podrunner.Runner {
	t.Helper()
	// Not ctx, which ends when the test function returns: the runner
	// must outlive the cleanups that unplug the instance and delete the
	// port, which need the chassis.
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	images := append(podrunner.OVNMetadataAgentMappings(), podrunner.OVNMappings()...)
	r, err := podrunner.New(podrunner.Options{
		Config:   c.Config,
		Nodes:    []podrunner.Node{{Name: node, NetNS: true}},
		StateDir: t.TempDir(),
		Images:   append(images, podrunner.DefaultImageMap()...),
		Logger:   testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
		// The stand-in listens on the host's loopback.
		HostAliases: podrunner.HostAliases{novaHost: netip.MustParseAddr("127.0.0.1")},
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
		if _, err := os.Stat(filepath.Join("/run/netns", r.NodeNetNS(node))); err == nil {
			t.Errorf("the runner left its network namespace %s", r.NodeNetNS(node))
		}
	})
	return r
}

// installIdentity stands in for the chassis's identity Job: it puts the
// set's own client identity, which its central accepts, where the node's
// ovn-controller and agent read their identity.
func installIdentity(t *testing.T, r *podrunner.Runner, node, tlsDir string) {
	t.Helper()
	dst := filepath.Join(r.NodeDir(node), "host", filepath.FromSlash(ovnv1alpha1.ChassisIdentityHostPath))
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		data, err := os.ReadFile(filepath.Join(tlsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// createObjects creates the agent's Secret and the chassis's nodes
// ConfigMap.
func createObjects(ctx context.Context, t *testing.T, c *testenv.Cluster, node, secret string) {
	t.Helper()
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: names("shared-secret"), Namespace: ns}, StringData: map[string]string{secretKey: secret}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: names("nodes"), Namespace: ns},
			Data: map[string]string{node: "SYSTEM_ID=" + string(uuid.NewUUID()) + "\nGATEWAY=false\nENCAP_TYPE=geneve\n"}},
	}
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// createBoundPort creates a network, a subnet and a port for the
// instance, binds the port to the node and returns it with the subnet's
// CIDR and the network's metadata port address.
func createBoundPort(ctx context.Context, t *testing.T, nc *gophercloud.ServiceClient, node, suffix, instanceID string) (*ports.Port, string, string) {
	t.Helper()
	net, err := networks.Create(ctx, nc, networks.CreateOpts{Name: "mdit-net-" + suffix}).Extract()
	if err != nil {
		t.Fatalf("creating a network: %v", err)
	}
	t.Cleanup(func() { deleteQuietly(t, "network", networks.Delete(context.Background(), nc, net.ID).ExtractErr()) })
	cidr := "10.78.0.0/24"
	subnet, err := subnets.Create(ctx, nc, subnets.CreateOpts{
		NetworkID: net.ID, Name: "mdit-subnet-" + suffix, IPVersion: gophercloud.IPv4, CIDR: cidr,
	}).Extract()
	if err != nil {
		t.Fatalf("creating a subnet: %v", err)
	}
	t.Cleanup(func() { deleteQuietly(t, "subnet", subnets.Delete(context.Background(), nc, subnet.ID).ExtractErr()) })
	port, err := ports.Create(ctx, nc, ports.CreateOpts{
		NetworkID: net.ID, Name: "mdit-port-" + suffix, DeviceID: instanceID, DeviceOwner: "compute:nova",
	}).Extract()
	if err != nil {
		t.Fatalf("creating a port: %v", err)
	}
	t.Cleanup(func() { deleteQuietly(t, "port", ports.Delete(context.Background(), nc, port.ID).ExtractErr()) })

	var bound struct {
		ports.Port
		portsbinding.PortsBindingExt
	}
	err = ports.Update(ctx, nc, port.ID, portsbinding.UpdateOptsExt{UpdateOptsBuilder: ports.UpdateOpts{}, HostID: &node}).ExtractInto(&bound)
	if err != nil || bound.VIFType != "ovs" {
		t.Fatalf("binding port %s to %s: %v (vif_type %q)", port.ID, node, err, bound.VIFType)
	}
	return port, cidr, metadataPortIP(ctx, t, nc, net.ID)
}

// metadataPortIP is the address of the network's metadata port, which
// ML2/OVN makes with the subnet: a localport that the agent's veth in the
// network's namespace answers for.
func metadataPortIP(ctx context.Context, t *testing.T, nc *gophercloud.ServiceClient, networkID string) string {
	t.Helper()
	var ip string
	waitFor(ctx, t, "the metadata port of network "+networkID, 30*time.Second, func() (bool, string) {
		pages, err := ports.List(nc, ports.ListOpts{NetworkID: networkID, DeviceOwner: "network:distributed"}).AllPages(ctx)
		if err != nil {
			return false, err.Error()
		}
		all, err := ports.ExtractPorts(pages)
		if err != nil || len(all) == 0 || len(all[0].FixedIPs) == 0 {
			return false, fmt.Sprintf("ports %+v, %v", all, err)
		}
		ip = all[0].FixedIPs[0].IPAddress
		return true, ""
	})
	return ip
}

// waitAgentAlive waits until Neutron lists an alive agent of that type on
// host.
func waitAgentAlive(ctx context.Context, t *testing.T, nc *gophercloud.ServiceClient, host, agentType string) {
	t.Helper()
	waitFor(ctx, t, "an alive "+agentType+" on "+host, 2*time.Minute, func() (bool, string) {
		all, err := openstacktest.NetworkAgents(ctx, nc, host)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range all {
			if a.AgentType == agentType && a.Alive {
				return true, ""
			}
		}
		return false, fmt.Sprintf("agents %+v", all)
	})
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func deleteQuietly(t *testing.T, what string, err error) {
	if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		t.Logf("cleanup of the test %s: %v", what, err)
	}
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
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
