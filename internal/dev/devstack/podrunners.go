package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/dev/vmtest"
	"github.com/anvil/anvil/internal/kubeconfig"
)

// podRunnerState identifies one compute cluster's pod runner process.
type podRunnerState struct {
	PID int `json:"pid"`
	// BinarySHA256 tells whether a rebuilt binary needs a restart.
	BinarySHA256 string `json:"binarySHA256"`
}

// runnerNodes are the nodes a cluster's pod runner registers: on a compute
// cluster the same names and zones kwok's nodes would have; on the
// management cluster one node without a zone, where the Nova's control
// plane, its database Jobs and the pools' host discovery Jobs run.
func runnerNodes(cluster string) []string {
	if cluster == ManagementCluster {
		return []string{NodeName(cluster, 1)}
	}
	nodes := make([]string, 0, NodesPerComputeCluster)
	for j := 1; j <= NodesPerComputeCluster; j++ {
		nodes = append(nodes, NodeName(cluster, j)+"="+ZoneName(cluster, j))
	}
	return nodes
}

// podRunnerArgs is the pod runner's command line for one cluster.
func (s *Stack) podRunnerArgs(cluster string) []string {
	nodes := runnerNodes(cluster)
	args := []string{
		"--kubeconfig=" + s.clusterKubeconfigPath(cluster),
		"--nodes=" + strings.Join(nodes, ","),
		"--state-dir=" + filepath.Join(s.dir, "podrunner", cluster),
	}
	// The runner hands its pods' processes what podRunnerEnv gives it.
	for _, kv := range podRunnerEnv(cluster, "") {
		name, _, _ := strings.Cut(kv, "=")
		args = append(args, "--pass-env="+name)
	}
	// OVN centrals and chassis run as the Debian programs everywhere.
	args = append(args, "--run-ovn")
	if cluster == metadataAgentCluster() && os.Geteuid() == 0 {
		// One node runs step 5's agent for real. The agent names its
		// network namespaces after the networks, host-wide, so two
		// agents of one host would fight over them; one node has it.
		args = append(args, "--metadata-agent-nodes="+MetadataAgentNode(),
			"--host-alias="+MetadataHostname+"=127.0.0.1")
	}
	if cluster == ManagementCluster {
		// The Nova's conductor, scheduler, API and metadata pods run as
		// the Debian programs, so the devstack's Nova is the one Anvil runs.
		// The OVN central lives here: its claims need volumes, and a
		// chassis on a compute cluster reaches it through node ports.
		args = append(args, "--run-nova-control-plane", "--provision-volumes", "--forward-node-ports")
		// The operator's chart runs here as the binary up builds, under
		// the chart's ServiceAccount; its log outlives each pod.
		args = append(args, "--run-image="+OperatorImageRepository+"="+s.operatorBinary(), "--run-image-log="+s.operatorLog())
	}
	return args
}

// MetadataAgentNode is the devstack's node whose chassis runs the
// userspace datapath in a network namespace of its own and which runs the
// OVN metadata agent's pods as Debian's agent: the first node of the first
// compute cluster, where the guide's pool runs too. It takes root; as
// another user the node keeps the dummy datapath and the runner simulates
// the agent's pods, as it does any pod without a local program. Its runner resolves MetadataHostname to the Gateway's address
// inside the namespace, since nip.io names do not resolve offline.
func MetadataAgentNode() string { return NodeName(metadataAgentCluster(), 1) }

// metadataAgentCluster is the compute cluster of MetadataAgentNode.
func metadataAgentCluster() string { return testenv.ComputeClusterName(0) }

// NodeHost is how a test instance reaches a node's chassis: the network
// namespace and the OVS database socket the node's pod runner made.
func (s *Stack) NodeHost(cluster, node string) vmtest.Host {
	stateDir := filepath.Join(s.dir, "podrunner", cluster)
	return vmtest.Host{NetNS: podrunner.NodeNetNSName(stateDir, node), OVSDBSocket: podrunner.NodeOVSDBSocketPath(stateDir, node)}
}

// clusterKubeconfigPath is a kubeconfig with only one cluster's context.
func (s *Stack) clusterKubeconfigPath(cluster string) string {
	return filepath.Join(s.dir, cluster+".kubeconfig")
}

// startPodRunners runs one pod runner per cluster: on each compute cluster
// in place of kwok's fake nodes, and on the management cluster for the host
// discovery Job, so that nova-compute and nova-manage pods run as real local
// processes against the OpenStack services. A runner built from the same
// binary that still runs is kept.
func (s *Stack) startPodRunners(ctx context.Context, st *state) (string, error) {
	binary := filepath.Join(s.dir, "bin", "anvil-podrunner")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./internal/dev/cmd/anvil-podrunner")
	build.Dir = s.root
	build.Stdout, build.Stderr = indent(s.out), indent(s.out)
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the pod runner: %w", err)
	}
	sum, err := fileSHA256(binary)
	if err != nil {
		return "", err
	}
	cloud, err := localcloud.Load(s.OpenStackDir())
	if err != nil {
		return "", err
	}
	merged, err := clientcmd.LoadFromFile(s.KubeconfigPath())
	if err != nil {
		return "", err
	}
	if st.PodRunners == nil {
		st.PodRunners = map[string]*podRunnerState{}
	}
	var started, kept []string
	for _, cluster := range s.clusterNames() {
		single, err := kubeconfig.Single(merged, ContextPrefix+cluster)
		if err != nil {
			return "", err
		}
		if err := clientcmd.WriteToFile(*single, s.clusterKubeconfigPath(cluster)); err != nil {
			return "", err
		}
		c, err := s.clusterClient(ctx, cluster)
		if err != nil {
			return "", err
		}
		// kwok's nodes of an earlier `up --openstack=false` carry the same
		// names; the runner registers its own in their place.
		if err := deleteKwokNodes(ctx, c, cluster); err != nil {
			return "", err
		}
		if prev := st.PodRunners[cluster]; prev != nil {
			if prev.BinarySHA256 == sum && processAlive(prev.PID) {
				kept = append(kept, cluster)
				continue
			}
			if err := stopProcess(prev.PID, 15*time.Second); err != nil {
				return "", err
			}
			delete(st.PodRunners, cluster)
		}
		pid, err := s.launchPodRunner(binary, cluster, cloud.Endpoints[localcloud.KeystoneCA])
		if err != nil {
			return "", err
		}
		st.PodRunners[cluster] = &podRunnerState{PID: pid, BinarySHA256: sum}
		started = append(started, cluster)
	}
	total := 0
	for _, cluster := range s.clusterNames() {
		c, err := s.clusterClient(ctx, cluster)
		if err != nil {
			return "", err
		}
		var names []string
		for _, n := range runnerNodes(cluster) {
			name, _, _ := strings.Cut(n, "=")
			names = append(names, name)
		}
		if err := waitNodesReady(ctx, c, names); err != nil {
			return "", fmt.Errorf("%s: the pod runner's nodes: %w; see %s", cluster, err, s.podRunnerLog(cluster))
		}
		total += len(names)
	}
	detail := fmt.Sprintf("%d Ready nodes on %d cluster(s)", total, s.n+1)
	if len(started) > 0 {
		detail += "; started for " + strings.Join(started, ", ")
	}
	if len(kept) > 0 {
		detail += "; already running for " + strings.Join(kept, ", ")
	}
	return detail, nil
}

func (s *Stack) podRunnerLog(cluster string) string {
	return filepath.Join(s.dir, "podrunner-"+cluster+".log")
}

// resourceAuditEnv sets nova-compute's update_resources_interval through
// oslo.config's environment source, which wins over the pool's files. The
// resource audit is what writes a host's failed_builds counter, and at
// Nova's 60 s a newcomer, or the e2e checks, wait up to a minute for each
// count; on the devstack it runs every 10 s. The pools' configuration
// stays as the operator renders it.
const resourceAuditEnv = "OS_DEFAULT__UPDATE_RESOURCES_INTERVAL"

// devstackResourceAudit is the devstack's resource audit interval, in
// seconds.
const devstackResourceAudit = "10"

// podRunnerEnv is what a cluster's pod runner adds to its environment and
// passes on to its pods' processes: the Keystone CA for every runner, which
// they trust the way a node trusts its cloud's CA, and on a compute cluster
// the resource audit interval its nova-compute processes read.
func podRunnerEnv(cluster, keystoneCA string) []string {
	env := []string{"REQUESTS_CA_BUNDLE=" + keystoneCA}
	if cluster != ManagementCluster {
		env = append(env, resourceAuditEnv+"="+devstackResourceAudit)
	}
	return env
}

// launchPodRunner starts one runner in a session of its own, so it outlives
// this command.
func (s *Stack) launchPodRunner(binary, cluster, keystoneCA string) (int, error) {
	logFile, err := os.OpenFile(s.podRunnerLog(cluster), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(binary, s.podRunnerArgs(cluster)...)
	cmd.Env = append(os.Environ(), podRunnerEnv(cluster, keystoneCA)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the pod runner for %s: %w", cluster, err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, os.WriteFile(filepath.Join(s.dir, "podrunner-"+cluster+".pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

// stopPodRunners stops every recorded pod runner; each stops the processes
// of its pods on the way out.
func (s *Stack) stopPodRunners(st *state) error {
	for cluster, pr := range st.PodRunners {
		fmt.Fprintf(s.out, "Stopping the pod runner of %s (pid %d)\n", cluster, pr.PID)
		if err := stopProcess(pr.PID, 30*time.Second); err != nil {
			return err
		}
		delete(st.PodRunners, cluster)
	}
	return nil
}

// deleteKwokNodes deletes this stack's nodes on a cluster that kwok
// simulates; other nodes are left alone.
func deleteKwokNodes(ctx context.Context, c client.Client, cluster string) error {
	return deleteStackNodes(ctx, c, cluster, true)
}

// deleteRunnerNodes deletes this stack's nodes on a cluster that a pod
// runner registered, that is those kwok does not simulate.
func deleteRunnerNodes(ctx context.Context, c client.Client, cluster string) error {
	return deleteStackNodes(ctx, c, cluster, false)
}

// deleteStackNodes deletes the stack's nodes of one cluster whose kwok
// annotation is present (kwok true) or absent (kwok false).
func deleteStackNodes(ctx context.Context, c client.Client, cluster string, kwok bool) error {
	for _, n := range runnerNodes(cluster) {
		name, _, _ := strings.Cut(n, "=")
		node := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, node)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if _, ok := node.Annotations[testenv.FakeNodeAnnotation]; ok != kwok {
			continue
		}
		if err := c.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing node %s on %s: %w", node.Name, cluster, err)
		}
	}
	return nil
}

// podRunnerStatus renders "<state>\t<detail>" for one cluster's runner.
func (s *Stack) podRunnerStatus(cluster string, pr *podRunnerState) string {
	if !processAlive(pr.PID) {
		return fmt.Sprintf("stopped\tpid %d is gone; see %s", pr.PID, s.podRunnerLog(cluster))
	}
	return fmt.Sprintf("running\tpid %d, log %s", pr.PID, s.podRunnerLog(cluster))
}
