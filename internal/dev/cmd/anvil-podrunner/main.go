// Command anvil-podrunner registers nodes on a cluster and runs the pods
// bound to them as local processes; see package podrunner. The devstack
// runs it in the background in place of kwok's fake nodes.
//
//	anvil-podrunner --kubeconfig compute-a.kubeconfig \
//	  --nodes compute-a-node-1=zone-1,compute-a-node-2=zone-2 \
//	  --state-dir .devstack/podrunner/compute-a
//
// With --run-nova-control-plane it also runs the pods of Nova's control
// plane (nova-api, nova-metadata, nova-conductor, nova-scheduler and
// nova-novncproxy) as this host's Debian Nova programs, instead of
// simulating them. With --run-ovn it runs an OVNCentral's and an
// OVNChassis's pods as this host's Debian OVS and OVN programs. With
// --forward-node-ports it listens on 127.0.0.1 at the node port of every
// NodePort Service that selects one of its process pods and forwards to
// the pod, as kube-proxy would; turn it on for one runner per cluster.
// With --metadata-agent-nodes a,b those nodes get a network namespace of
// their own, where their chassis runs the userspace datapath, and the
// runner runs the OVN metadata agent's pods as Debian's agent; that needs
// root. --host-alias name=address makes a name resolve inside those
// namespaces, for a name such as a nip.io host that nothing resolves
// offline. --run-image repository=binary runs that image's containers as
// a local binary with the pod's service account token; the devstack runs
// the operator's chart this way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/provisioner"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// config is the parsed command line.
type config struct {
	kubeconfig string
	stateDir   string
	nodes      []podrunner.Node
	passEnv    []string
	// novaControlPlane runs Nova's control-plane pods rather than
	// simulating them.
	novaControlPlane bool
	// ovn runs OVN's pods rather than simulating them.
	ovn bool
	// metadataAgentNodes get a network namespace of their own and run the
	// OVN metadata agent's pods.
	metadataAgentNodes []string
	// forwardNodePorts serves NodePorts of the runner's pods.
	forwardNodePorts bool
	// provisionVolumes binds the cluster's claims to hostPath volumes.
	provisionVolumes bool
	// hostAliases are names the programs in the nodes' namespaces resolve.
	hostAliases podrunner.HostAliases
	// entrypoints run images' containers as local binaries; run fills in
	// how they reach the cluster.
	entrypoints []podrunner.Entrypoint
	// runImageLog also receives the entrypoints' output.
	runImageLog string
}

// images returns the ImageMap the configuration asks for; nil means the
// runner's default.
func (c config) images() podrunner.ImageMap {
	if !c.novaControlPlane && !c.ovn && len(c.metadataAgentNodes) == 0 && len(c.entrypoints) == 0 {
		return nil
	}
	var m podrunner.ImageMap
	for _, e := range c.entrypoints {
		m = append(m, podrunner.EntrypointMapping(e))
	}
	if len(c.metadataAgentNodes) > 0 {
		m = append(m, podrunner.OVNMetadataAgentMappings()...)
	}
	if c.novaControlPlane {
		m = append(m, podrunner.NovaControlPlaneMappings()...)
	}
	if c.ovn {
		m = append(m, podrunner.OVNMappings()...)
	}
	return append(m, podrunner.DefaultImageMap()...)
}

// run executes the command and returns its exit code, so that deferred
// cleanups run before the process exits.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("anvil-podrunner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	cfg, err := parseFlags(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "Error:", err)
		return 2
	}
	log := zap.New(zap.UseFlagOptions(&zapOpts)).WithName("podrunner")
	// The runner itself uses client-go, not controller-runtime's clients;
	// setting controller-runtime's global logger anyway means a dependency
	// that logs through it writes here rather than printing a "SetLogger
	// was never called" warning with a stack trace into the runner's log.
	ctrllog.SetLogger(log)

	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		log.Error(err, "cannot load the kubeconfig")
		return 1
	}
	if err := rest.LoadTLSFiles(restConfig); err != nil {
		log.Error(err, "cannot read the kubeconfig's certificates")
		return 1
	}
	for i := range cfg.entrypoints {
		cfg.entrypoints[i].Server, cfg.entrypoints[i].CAData = restConfig.Host, restConfig.CAData
	}
	env := map[string]string{}
	for _, name := range cfg.passEnv {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	runner, err := podrunner.New(podrunner.Options{
		Config: restConfig, Nodes: cfg.nodes, StateDir: cfg.stateDir, Images: cfg.images(), Env: env, Logger: log,
		ForwardNodePorts: cfg.forwardNodePorts, HostAliases: cfg.hostAliases,
	})
	if err != nil {
		log.Error(err, "invalid options")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runner.Start(ctx); err != nil {
		log.Error(err, "cannot start the runner")
		return 1
	}
	if cfg.provisionVolumes {
		if err := provisioner.Start(ctx, restConfig); err != nil {
			log.Error(err, "cannot start the volume provisioner")
			return 1
		}
	}
	names := make([]string, 0, len(cfg.nodes))
	for _, n := range cfg.nodes {
		names = append(names, n.Name)
	}
	log.Info("running", "nodes", names, "stateDir", cfg.stateDir)
	select {
	case <-ctx.Done():
	case <-runner.Done():
	}
	if err := runner.Wait(); err != nil {
		log.Error(err, "the runner stopped")
		return 1
	}
	return 0
}

// parseFlags reads the command line. Nodes come from --nodes
// name=zone,name=zone and from repeated --node name, each optionally
// followed by --zone z for that node.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	var nodesFlag string
	nodes := &nodeFlags{}
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster the nodes join (default $KUBECONFIG)")
	fs.StringVar(&cfg.stateDir, "state-dir", "", "directory for the nodes' hostPaths and the pods' work directories (required)")
	fs.StringVar(&nodesFlag, "nodes", "", "nodes to register, as name=zone or name, separated by commas")
	fs.Func("node", "a node to register; repeatable", nodes.addNode)
	fs.Func("zone", "the zone of the node named by the preceding --node", nodes.setZone)
	fs.Func("pass-env", "a variable of this process's environment to give every pod process, such as REQUESTS_CA_BUNDLE; repeatable, or comma-separated", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				cfg.passEnv = append(cfg.passEnv, name)
			}
		}
		return nil
	})
	fs.BoolVar(&cfg.novaControlPlane, "run-nova-control-plane", false, "run the pods of Nova's control plane (api, metadata, conductor, scheduler, novncproxy) as this host's Debian Nova programs instead of simulating them")
	fs.BoolVar(&cfg.ovn, "run-ovn", false, "run the pods of OVN centrals and chassis (database members, northd, ovsdb-server, ovs-vswitchd with the dummy datapath, ovn-controller) as this host's Debian OVS and OVN programs instead of simulating them")
	fs.Func("metadata-agent-nodes", "nodes, separated by commas, that get a network namespace of their own, where their chassis's ovs-vswitchd runs the userspace datapath, and run the OVN metadata agent's pods as Debian's agent; needs root", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				cfg.metadataAgentNodes = append(cfg.metadataAgentNodes, name)
			}
		}
		return nil
	})
	fs.Func("host-alias", "name=address: a name the programs in the --metadata-agent-nodes' namespaces resolve to address, as a pod's hostAliases would, for a name no resolver here knows; repeatable", func(v string) error {
		name, ip, err := podrunner.ParseHostAlias(v)
		if err != nil {
			return err
		}
		if cfg.hostAliases == nil {
			cfg.hostAliases = podrunner.HostAliases{}
		}
		cfg.hostAliases[name] = ip
		return nil
	})
	fs.Func("run-image", "repository=binary: run the containers of that image repository as the local binary, in place of the image's entrypoint, with a kubeconfig for the pod's service account token; repeatable", func(v string) error {
		repo, binary, ok := strings.Cut(v, "=")
		if !ok || repo == "" || !filepath.IsAbs(binary) {
			return fmt.Errorf("%q is not repository=/absolute/binary", v)
		}
		cfg.entrypoints = append(cfg.entrypoints, podrunner.Entrypoint{Repository: repo, Binary: binary})
		return nil
	})
	fs.StringVar(&cfg.runImageLog, "run-image-log", "", "a file that also receives the output of every --run-image container and outlives its pods")
	fs.BoolVar(&cfg.provisionVolumes, "provision-volumes", false, "install the default StorageClass "+provisioner.StorageClassName+" and bind every claim of it to a hostPath volume, since the cluster has no storage driver; one runner per cluster")
	fs.BoolVar(&cfg.forwardNodePorts, "forward-node-ports", false, "listen on 127.0.0.1 at the node port of every NodePort Service that selects a pod this runner runs as a process, and forward to the pod, as kube-proxy would; one runner per host and cluster")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	listed, err := parseNodes(nodesFlag)
	if err != nil {
		return config{}, err
	}
	cfg.nodes = append(listed, nodes.nodes...)
	if len(cfg.nodes) == 0 {
		return config{}, errors.New("no nodes: give --nodes or --node")
	}
	if err := markNetNSNodes(cfg.nodes, cfg.metadataAgentNodes); err != nil {
		return config{}, err
	}
	for i := range cfg.entrypoints {
		cfg.entrypoints[i].LogCopy = cfg.runImageLog
	}
	if cfg.stateDir == "" {
		return config{}, errors.New("--state-dir is required")
	}
	if cfg.kubeconfig == "" {
		return config{}, errors.New("--kubeconfig is required when $KUBECONFIG is unset")
	}
	return cfg, nil
}

// parseNodes reads "name=zone,name,..."; a node without "=zone" gets no
// zone label.
func parseNodes(s string) ([]podrunner.Node, error) {
	var out []podrunner.Node
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, zone, hasZone := strings.Cut(item, "=")
		if name == "" || (hasZone && zone == "") {
			return nil, fmt.Errorf("--nodes: %q is not name=zone", item)
		}
		out = append(out, newNode(name, zone))
	}
	return out, nil
}

// markNetNSNodes gives the named nodes a network namespace of their own;
// a name that is not a node is refused, since it would silently run no
// agent.
func markNetNSNodes(nodes []podrunner.Node, names []string) error {
	for _, name := range names {
		found := false
		for i := range nodes {
			if nodes[i].Name == name {
				nodes[i].NetNS, found = true, true
			}
		}
		if !found {
			return fmt.Errorf("--metadata-agent-nodes: %s is not one of the nodes", name)
		}
	}
	return nil
}

// nodeFlags collects --node and --zone in command-line order.
type nodeFlags struct {
	nodes []podrunner.Node
}

// addNode handles --node.
func (f *nodeFlags) addNode(name string) error {
	if name == "" {
		return errors.New("empty node name")
	}
	f.nodes = append(f.nodes, newNode(name, ""))
	return nil
}

// setZone handles --zone, which belongs to the --node before it.
func (f *nodeFlags) setZone(zone string) error {
	if len(f.nodes) == 0 {
		return errors.New("--zone must follow the --node it belongs to")
	}
	last := &f.nodes[len(f.nodes)-1]
	if _, ok := last.Labels[corev1.LabelTopologyZone]; ok {
		return fmt.Errorf("node %s has a zone already", last.Name)
	}
	if zone == "" {
		return errors.New("empty zone")
	}
	last.Labels[corev1.LabelTopologyZone] = zone
	return nil
}

// newNode returns a node with a zone label, if zone is set.
func newNode(name, zone string) podrunner.Node {
	n := podrunner.Node{Name: name, Labels: map[string]string{}}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	return n
}
