package podrunner

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Timing of the NodePort forwarder.
const (
	// nodePortResync is how often the forwarder looks again without being
	// told, which also retries a port that could not be bound.
	nodePortResync = 2 * time.Second
	// nodePortDialTimeout bounds the connection to the pod.
	nodePortDialTimeout = 5 * time.Second
)

// nodePortForwarder stands in for kube-proxy's NodePorts: for every
// NodePort or LoadBalancer Service that selects a pod running as a process
// on this runner, it listens on HostIP at the node port and forwards each
// TCP connection to the pod's address and target port, bytes untouched,
// so TLS passes through. It follows Services as they change type, ports or
// selector, and pods as they come and go.
type nodePortForwarder struct {
	log       logr.Logger
	services  func() []*corev1.Service
	endpoints func() []endpoint
	kick      chan struct{}

	mu        sync.Mutex
	listeners map[int32]*portListener
	conns     map[net.Conn]struct{}
	failed    map[int32]string
	wg        sync.WaitGroup
}

// portListener is one bound node port and the Service it serves.
type portListener struct {
	service string
	ln      net.Listener
}

// newNodePortForwarder returns a forwarder over the given Services and
// local pods; run starts it.
func newNodePortForwarder(log logr.Logger, services func() []*corev1.Service, endpoints func() []endpoint) *nodePortForwarder {
	return &nodePortForwarder{
		log: log, services: services, endpoints: endpoints,
		kick:      make(chan struct{}, 1),
		listeners: map[int32]*portListener{},
		conns:     map[net.Conn]struct{}{},
		failed:    map[int32]string{},
	}
}

// trigger asks the forwarder to look again soon; it never blocks.
func (f *nodePortForwarder) trigger() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// watchServices returns the Services of the cluster as an informer keeps
// them, and starts the informer; synced reports when it has listed them.
func watchServices(ctx context.Context, client kubernetes.Interface, onChange func()) (list func() []*corev1.Service, synced cache.InformerSynced, err error) {
	factory := informers.NewSharedInformerFactory(client, informerResync)
	inf := factory.Core().V1().Services()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { onChange() },
		UpdateFunc: func(any, any) { onChange() },
		DeleteFunc: func(any) { onChange() },
	}); err != nil {
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	list = func() []*corev1.Service {
		svcs, _ := inf.Lister().List(labels.Everything())
		return svcs
	}
	return list, inf.Informer().HasSynced, nil
}

// run reconciles until ctx ends, then closes every listener and
// connection and waits for their goroutines.
func (f *nodePortForwarder) run(ctx context.Context, synced cache.InformerSynced) {
	defer f.shutdown()
	if synced != nil && !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	tick := time.NewTicker(nodePortResync)
	defer tick.Stop()
	for {
		f.reconcile()
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		case <-tick.C:
		}
	}
}

// desiredNodePorts maps each node port the runner should serve to the
// Service ("namespace/name") that owns it: TCP ports of NodePort and
// LoadBalancer Services that select at least one of the local pods.
func desiredNodePorts(svcs []*corev1.Service, eps []endpoint) map[int32]string {
	want := map[int32]string{}
	for _, svc := range svcs {
		if svc.Spec.Type != corev1.ServiceTypeNodePort && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		if _, ok := pickEndpoint(svc, eps); !ok {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.NodePort != 0 && (sp.Protocol == "" || sp.Protocol == corev1.ProtocolTCP) {
				want[sp.NodePort] = svc.Namespace + "/" + svc.Name
			}
		}
	}
	return want
}

// reconcile binds the ports now wanted and closes those no longer wanted.
// A port that cannot be bound, because something else on this host holds
// it, is logged once and tried again at the next pass.
func (f *nodePortForwarder) reconcile() {
	want := desiredNodePorts(f.services(), f.endpoints())
	f.mu.Lock()
	defer f.mu.Unlock()
	for port, l := range f.listeners {
		if want[port] != l.service {
			f.log.Info("closing a node port", "port", port, "service", l.service)
			_ = l.ln.Close()
			delete(f.listeners, port)
		}
	}
	for port, svc := range want {
		if _, ok := f.listeners[port]; ok {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(HostIP, strconv.Itoa(int(port))))
		if err != nil {
			if f.failed[port] != err.Error() {
				f.log.Error(err, "cannot listen on a node port; retrying", "port", port, "service", svc)
				f.failed[port] = err.Error()
			}
			continue
		}
		delete(f.failed, port)
		f.log.Info("forwarding a node port", "port", port, "service", svc)
		f.listeners[port] = &portListener{service: svc, ln: ln}
		f.wg.Add(1)
		go f.accept(ln, port)
	}
}

// accept serves one listener until it is closed.
func (f *nodePortForwarder) accept(ln net.Listener, port int32) {
	defer f.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		if !f.track(conn) {
			_ = conn.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(conn)
			f.forward(conn, port)
		}()
	}
}

// target finds where a connection to a node port goes now: the Service
// that owns the port, the local pod it selects, and that pod's target
// port. Reading it per connection follows a pod that was recreated.
func (f *nodePortForwarder) target(port int32) (string, error) {
	for _, svc := range f.services() {
		for _, sp := range svc.Spec.Ports {
			if sp.NodePort != port {
				continue
			}
			ep, ok := pickEndpoint(svc, f.endpoints())
			if !ok {
				return "", errors.New("the Service selects no pod of this runner")
			}
			tp, err := targetPort(sp, ep.spec)
			if err != nil {
				return "", err
			}
			return net.JoinHostPort(ep.ip, strconv.Itoa(tp)), nil
		}
	}
	return "", errors.New("no Service has this node port")
}

// forward connects a client to the pod and copies both ways until both
// sides are done.
func (f *nodePortForwarder) forward(client net.Conn, port int32) {
	addr, err := f.target(port)
	if err != nil {
		f.log.V(1).Info("refusing a node port connection", "port", port, "reason", err.Error())
		return
	}
	server, err := net.DialTimeout("tcp", addr, nodePortDialTimeout)
	if err != nil {
		f.log.V(1).Info("cannot reach the pod of a node port", "port", port, "target", addr, "error", err.Error())
		return
	}
	if !f.track(server) {
		_ = server.Close()
		return
	}
	defer f.untrack(server)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); pipe(server, client) }()
	go func() { defer both.Done(); pipe(client, server) }()
	both.Wait()
}

// pipe copies from src to dst and then half-closes dst, so that the other
// side sees the end of the stream while its answer can still come back.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
		return
	}
	_ = dst.Close()
}

// track records an open connection so that shutdown can close it; it
// reports false once the forwarder is shutting down.
func (f *nodePortForwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// untrack closes and forgets a connection.
func (f *nodePortForwarder) untrack(c net.Conn) {
	_ = c.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
}

// shutdown closes every listener and connection and waits for the
// goroutines that served them.
func (f *nodePortForwarder) shutdown() {
	f.mu.Lock()
	for port, l := range f.listeners {
		_ = l.ln.Close()
		delete(f.listeners, port)
	}
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}
