package podrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

const (
	// component names the runner in events and as its API user agent.
	component = "anvil-podrunner"
	// kubeletVersion is what the nodes report as their kubelet, so that
	// anyone listing nodes sees who runs them.
	kubeletVersion = "anvil-podrunner"
	// readyTimeout bounds how long Start waits for the nodes to register.
	readyTimeout = 2 * time.Minute
	// podWorkers is the number of pods each node's controller syncs at once.
	podWorkers = 2
	// informerResync matches virtual-kubelet's own default.
	informerResync = time.Minute
)

// Node is a node the runner registers and runs pods for.
type Node struct {
	// Name is the node's name, and the host name nova-compute registers.
	Name string
	// Labels are set on the node besides kubernetes.io/hostname, os and
	// arch; a zone goes here as corev1.LabelTopologyZone.
	Labels map[string]string
	// Annotations are set on the node when the runner registers it, such
	// as ComputeDriverAnnotation. Annotations added later with kubectl
	// count as well: the runner reads them when it prepares a pod.
	Annotations map[string]string
	// NetNS gives the node a network namespace of its own
	// (NodeNetNSName), made when the runner starts and deleted when it
	// stops. Its chassis's ovs-vswitchd runs inside with the userspace
	// (netdev) datapath, which moves real packets, instead of the dummy
	// one, and so do ovn-controller and the OVN metadata agent, which
	// needs it. It takes root. The runner must know before the chassis's
	// ovs-vswitchd starts, so it is an option rather than something read
	// from the pods.
	NetNS bool
}

// Options configure a Runner.
type Options struct {
	// Config reaches the cluster the nodes join.
	Config *rest.Config
	// Nodes are the nodes to register.
	Nodes []Node
	// StateDir holds one directory per node, <StateDir>/<node>, under
	// which the node's hostPaths and its pods' work directories live.
	StateDir string
	// Images decides which containers run as processes; nil means
	// DefaultImageMap.
	Images ImageMap
	// Env is added to the environment of every process, under the pod's
	// own variables; REQUESTS_CA_BUNDLE, for one, makes the processes trust
	// a local cloud's CA the way a real node would. Values are never logged.
	Env map[string]string
	// Logger receives the runner's log; the zero value discards it.
	Logger logr.Logger
	// ForwardNodePorts stands in for kube-proxy's NodePorts: for every
	// NodePort Service that selects a pod running as a process on this
	// runner, the runner listens on 127.0.0.1 at the node port and
	// forwards TCP to the pod's address and target port. Off by default,
	// since two runners of one host must not both claim a port; the
	// runner of the cluster that serves the ports turns it on.
	ForwardNodePorts bool
	// HostAliases are names the programs in a node's network namespace
	// resolve, as a pod's hostAliases would make them: the runner answers
	// them inside, on the host's nameserver addresses, and relays to the
	// aliased address. A name such as the devstack's
	// nova-metadata.127-0-0-1.nip.io then keeps its TLS identity offline,
	// where nothing else resolves it.
	HostAliases HostAliases
}

// Runner is a kubelet for test and devstack clusters: it registers nodes
// through virtual-kubelet's node controller and runs the pods bound to them
// as local processes, or simulates those that have no local command.
type Runner struct {
	opts      Options
	handlers  []*nodeHandler
	forwarder *nodePortForwarder
	// forwarded is closed when the forwarder has stopped; it is closed
	// from the start when there is none.
	forwarded chan struct{}

	mu      sync.Mutex
	started bool
	done    chan struct{}
	err     error
}

// New checks the options and returns a Runner that has not started.
func New(opts Options) (*Runner, error) {
	if opts.Config == nil {
		return nil, errors.New("a rest config is required")
	}
	if opts.StateDir == "" {
		return nil, errors.New("a state directory is required")
	}
	if len(opts.Nodes) == 0 {
		return nil, errors.New("at least one node is required")
	}
	seen := map[string]bool{}
	for _, n := range opts.Nodes {
		// The name becomes a directory and a DNS label; refuse what would
		// be neither before anything is registered.
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			return nil, fmt.Errorf("node name %q: %v", n.Name, errs)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("node %s is listed twice", n.Name)
		}
		seen[n.Name] = true
	}
	for _, n := range opts.Nodes {
		if n.NetNS && os.Geteuid() != 0 {
			return nil, fmt.Errorf("node %s: a network namespace of its own needs root", n.Name)
		}
	}
	if opts.Images == nil {
		opts.Images = DefaultImageMap()
	}
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	opts.StateDir = abs
	return &Runner{opts: opts, done: make(chan struct{}), forwarded: make(chan struct{})}, nil
}

// NodeDir returns the directory of a node: the root of its hostPaths and of
// its pods' work directories.
func (r *Runner) NodeDir(node string) string {
	return filepath.Join(r.opts.StateDir, node)
}

// PodDir returns the work directory of a pod on its node. It holds the
// materialised volumes, one work directory per container under
// "containers", and one log file per container under "logs".
func (r *Runner) PodDir(pod *corev1.Pod) string {
	return filepath.Join(r.NodeDir(pod.Spec.NodeName), podsDirName, podDirName(pod))
}

// NodeNetNS returns the name of a node's network namespace, in /run/netns,
// or "" when the node shares the host's network.
func (r *Runner) NodeNetNS(node string) string {
	for _, n := range r.opts.Nodes {
		if n.Name == node && n.NetNS {
			return NodeNetNSName(r.opts.StateDir, node)
		}
	}
	return ""
}

// NodeOVSDBSocket returns the unix socket of the node's OVS database, the
// chassis's /run/openvswitch/db.sock; it exists while the chassis's
// ovsdb-server runs. A socket crosses network namespaces, so it is how a
// test plugs an interface into the node's br-int.
func (r *Runner) NodeOVSDBSocket(node string) string {
	return NodeOVSDBSocketPath(r.opts.StateDir, node)
}

// NodeOVSDBSocketPath is NodeOVSDBSocket for the runner with the absolute
// state directory stateDir, for a process other than the runner's, such
// as a devstack's test helper.
func NodeOVSDBSocketPath(stateDir, node string) string {
	return filepath.Join(hostPathDir(filepath.Join(stateDir, node, hostPathsDirName), ovsRunDir), "db.sock")
}

// ContainerDir returns the work directory of a container of a pod, where
// the OVN mappings keep control sockets and logs.
func (r *Runner) ContainerDir(pod *corev1.Pod, container string) string {
	return filepath.Join(r.PodDir(pod), containersDirName, container)
}

// ContainerLog returns the log file of a container of a pod.
func (r *Runner) ContainerLog(pod *corev1.Pod, container string) string {
	return filepath.Join(r.PodDir(pod), logsDirName, container+".log")
}

// controllers are the two virtual-kubelet controllers of one node.
type controllers struct {
	name  string
	pods  *vknode.PodController
	nodes *vknode.NodeController
}

// Start registers the nodes and starts their controllers, and returns once
// every node is registered and Ready and its pod controller is in sync. The
// runner runs until ctx ends; Wait then returns when every process has
// stopped. Start may be called once.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("the runner was started before")
	}
	r.started = true
	r.mu.Unlock()

	cfg := rest.CopyConfig(r.opts.Config)
	// Every pod's status goes through this client; the client-go default
	// of 5 requests a second would queue them behind each other.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = component
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		close(r.done)
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	ctx = vklog.WithLogger(ctx, newVKLogger(r.opts.Logger.WithName("virtual-kubelet")))
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(corev1.NamespaceAll)})
	// The pod controller requires Secret, ConfigMap and Service informers
	// for its own downward API resolution, which the runner turns off in
	// favour of reading objects when a pod starts. They are never started,
	// so the runner watches no Secrets.
	unused := informers.NewSharedInformerFactory(client, 0)
	synced, err := r.newForwarder(ctx, client)
	if err != nil {
		cancel()
		close(r.forwarded)
		r.finish(nil, events, err)
		return err
	}

	var all []controllers
	for _, n := range r.opts.Nodes {
		h := newNodeHandler(ctx, n.Name, r.NodeDir(n.Name), r.opts.Images, apiSource{client}, r.opts.Env, r.opts.Logger)
		if r.forwarder != nil {
			h.changed = r.forwarder.trigger
		}
		r.handlers = append(r.handlers, h)
		if n.NetNS {
			if h.netns, err = createNodeNetwork(ctx, r.NodeNetNS(n.Name), r.opts.HostAliases, h.log); err != nil {
				err = fmt.Errorf("node %s: %w", n.Name, err)
				cancel()
				close(r.forwarded)
				r.finish(all, events, err)
				return err
			}
		}
		c, err := r.controllersFor(ctx, client, events, unused, n, h)
		if err != nil {
			cancel()
			close(r.forwarded)
			r.finish(all, events, err)
			return err
		}
		all = append(all, c)
	}
	r.startForwarder(ctx, synced)

	go func() {
		err := r.supervise(ctx, all)
		cancel()
		r.finish(all, events, err)
	}()

	if err := r.waitReady(ctx, all); err != nil {
		cancel()
		<-r.done
		return err
	}
	for _, n := range r.opts.Nodes {
		if err := clearStartupTaint(ctx, client, n.Name); err != nil {
			cancel()
			<-r.done
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	r.opts.Logger.Info("nodes are ready", "nodes", len(all))
	return nil
}

// newForwarder creates the NodePort forwarder when the options ask for
// one, with the Service informer it reads; startForwarder runs it once
// every node's handler exists.
func (r *Runner) newForwarder(ctx context.Context, client kubernetes.Interface) (cache.InformerSynced, error) {
	if !r.opts.ForwardNodePorts {
		return nil, nil
	}
	// The forwarder exists before the informer, whose events trigger it;
	// it reads the informer's Services only once it runs.
	f := newNodePortForwarder(r.opts.Logger.WithName("nodeports"), nil, func() []endpoint {
		var eps []endpoint
		for _, h := range r.handlers {
			eps = append(eps, h.endpoints()...)
		}
		return eps
	})
	services, synced, err := watchServices(ctx, client, f.trigger)
	if err != nil {
		return nil, err
	}
	f.services = services
	r.forwarder = f
	return synced, nil
}

// startForwarder runs the forwarder, if any, until ctx ends.
func (r *Runner) startForwarder(ctx context.Context, synced cache.InformerSynced) {
	if r.forwarder == nil {
		close(r.forwarded)
		return
	}
	go func() {
		defer close(r.forwarded)
		r.forwarder.run(ctx, synced)
	}()
}

// controllersFor builds and starts the pod and node controllers of a node.
func (r *Runner) controllersFor(ctx context.Context, client kubernetes.Interface, events record.EventBroadcaster, unused informers.SharedInformerFactory, n Node, h *nodeHandler) (controllers, error) {
	// Only the node's own pods: the field selector keeps the informer from
	// caching every pod of the cluster once per node.
	podInformers := informers.NewSharedInformerFactoryWithOptions(client, informerResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", n.Name).String()
		}))
	pods, err := vknode.NewPodController(vknode.PodControllerConfig{
		PodClient:         client.CoreV1(),
		PodInformer:       podInformers.Core().V1().Pods(),
		EventRecorder:     events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component, Host: n.Name}),
		Provider:          h,
		ConfigMapInformer: unused.Core().V1().ConfigMaps(),
		SecretInformer:    unused.Core().V1().Secrets(),
		ServiceInformer:   unused.Core().V1().Services(),
		// The runner resolves the env itself. virtual-kubelet's resolution
		// would write Secret values into the pod object the controller
		// keeps and compares, and sends back with status updates.
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		return controllers{}, fmt.Errorf("node %s: %w", n.Name, err)
	}
	nodeClient := client.CoreV1().Nodes()
	nodes, err := vknode.NewNodeController(vknode.NaiveNodeProvider{}, nodeObject(n), nodeClient,
		vknode.WithNodeEnableLeaseV1(client.CoordinationV1().Leases(corev1.NamespaceNodeLease), 0),
		// A node deleted under the runner, by a test cleaning up for
		// instance, is registered again instead of failing every update.
		vknode.WithNodeStatusUpdateErrorHandler(func(ctx context.Context, err error) error {
			if !apierrors.IsNotFound(err) {
				return err
			}
			_, cerr := nodeClient.Create(ctx, nodeObject(n), metav1.CreateOptions{})
			return cerr
		}),
	)
	if err != nil {
		return controllers{}, fmt.Errorf("node %s: %w", n.Name, err)
	}
	podInformers.Start(ctx.Done())
	go func() { _ = pods.Run(ctx, podWorkers) }()
	go func() { _ = nodes.Run(ctx) }()
	return controllers{name: n.Name, pods: pods, nodes: nodes}, nil
}

// waitReady waits until every controller is ready, one fails, or the
// timeout passes.
func (r *Runner) waitReady(ctx context.Context, all []controllers) error {
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	for _, c := range all {
		for _, w := range []struct {
			what  string
			ready <-chan struct{}
			done  <-chan struct{}
			err   func() error
		}{
			{"pod controller", c.pods.Ready(), c.pods.Done(), c.pods.Err},
			{"node controller", c.nodes.Ready(), c.nodes.Done(), c.nodes.Err},
		} {
			select {
			case <-w.ready:
			case <-w.done:
				return fmt.Errorf("node %s: the %s stopped: %w", c.name, w.what, w.err())
			case <-ctx.Done():
				return ctx.Err()
			case <-timeout.C:
				return fmt.Errorf("node %s: the %s was not ready within %s", c.name, w.what, readyTimeout)
			}
		}
	}
	return nil
}

// supervise waits until ctx ends or a controller stops on its own, which
// only happens on an error; one node failing stops the runner, so that a
// process supervising it notices.
func (r *Runner) supervise(ctx context.Context, all []controllers) error {
	stopped := make(chan error, 2*len(all))
	for _, c := range all {
		go func() {
			<-c.pods.Done()
			stopped <- wrapStopped(c.name, "pod controller", c.pods.Err())
		}()
		go func() {
			<-c.nodes.Done()
			stopped <- wrapStopped(c.name, "node controller", c.nodes.Err())
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-stopped:
		// Controllers also stop when ctx ends; that race is no failure.
		select {
		case <-ctx.Done():
			return nil
		default:
		}
		if err == nil {
			err = errors.New("a controller stopped without an error")
		}
		r.opts.Logger.Error(err, "stopping the runner")
		return err
	}
}

// wrapStopped names the controller an error came from.
func wrapStopped(node, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("node %s: the %s stopped: %w", node, what, err)
}

// finish waits for the controllers and every pod's processes, then marks
// the runner done with err.
func (r *Runner) finish(all []controllers, events record.EventBroadcaster, err error) {
	for _, c := range all {
		<-c.pods.Done()
		<-c.nodes.Done()
	}
	for _, h := range r.handlers {
		h.running.Wait()
		// Only now: the processes that ran in it are gone.
		if h.netns != nil {
			if nerr := h.netns.close(context.Background()); nerr != nil {
				r.opts.Logger.Error(nerr, "cannot delete the node's network namespace", "node", h.node, "netns", h.netns.name)
			}
		}
	}
	<-r.forwarded
	events.Shutdown()
	r.err = err
	close(r.done)
}

// Wait blocks until the runner has stopped, after the context given to
// Start ended or a controller failed, and every process it started has
// exited. It returns the error that stopped the runner, if any.
func (r *Runner) Wait() error {
	<-r.done
	return r.err
}

// Done is closed when the runner has stopped.
func (r *Runner) Done() <-chan struct{} { return r.done }
