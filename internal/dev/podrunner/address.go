package podrunner

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// statefulSetPodNameLabel is the label the StatefulSet controller puts on
// every pod; a per-member Service selects its member by it.
const statefulSetPodNameLabel = "statefulset.kubernetes.io/pod-name"

// Loopback addresses are drawn from 127.0.0.0/8 without 127.0.0.0/16, so
// that they never meet 127.0.0.1 or the addresses local services usually
// bind. Pods take second octets 1..127 and nodes 128..254, so a pod and a
// node never share one; the last octet avoids 0 and 255 to stay clear of
// anything that reads them as network or broadcast addresses.
const (
	podOctetBase  = 1
	nodeOctetBase = 128
	octetSpan     = 127
	lastOctets    = 254
)

// OwnPodAddress is the loopback address of a pod whose mapping asks for one
// (Mapping.OwnAddress): 127.x.y.z derived from the pod's namespace and
// name alone, so that a pod that is recreated under its name, a StatefulSet
// member above all, keeps its address and its Raft peers still find it.
func OwnPodAddress(namespace, name string) string {
	return loopbackAddress(podOctetBase, "pod/"+namespace+"/"+name)
}

// NodeEncapAddress is the tunnel address a chassis on the node advertises
// (external_ids:ovn-encap-ip). Every runner node reports 127.0.0.1, but the
// southbound database indexes Encap rows by (type, ip) and refuses a second
// chassis with the same pair, so each node gets an address of its own.
func NodeEncapAddress(node string) string {
	return loopbackAddress(nodeOctetBase, "node/"+node)
}

// podAddress is the pod's IP: its own loopback address when one of its
// mapped containers asks for it and the pod is not on the host network,
// else the host's.
func podAddress(pod *corev1.Pod, plans []plan) string {
	if pod.Spec.HostNetwork {
		return HostIP
	}
	for _, p := range plans {
		if p.mapping != nil && p.mapping.OwnAddress {
			return OwnPodAddress(pod.Namespace, pod.Name)
		}
	}
	return HostIP
}

// loopbackAddress hashes key into 127.[base, base+octetSpan).0-255.1-254.
func loopbackAddress(base uint64, key string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	n := h.Sum64() % (octetSpan * 256 * lastOctets)
	return fmt.Sprintf("127.%d.%d.%d", base+n/(256*lastOctets), (n/lastOctets)%256, 1+n%lastOctets)
}

// memberPod recognises a pod's DNS name behind a headless Service,
// <pod>.<service>.<namespace>.svc or the same with .cluster.local, and
// returns the pod's namespace and name.
func memberPod(host string) (namespace, name string, ok bool) {
	parts := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	switch {
	case len(parts) == 4 && parts[3] == "svc":
	case len(parts) == 6 && parts[3] == "svc" && parts[4] == "cluster" && parts[5] == "local":
	default:
		return "", "", false
	}
	for _, p := range parts[:3] {
		if p == "" {
			return "", "", false
		}
	}
	return parts[2], parts[0], true
}

// translateOVNAddresses rewrites the active entries of an OVN connection
// list, "ssl:host:port,tcp:host:port,unix:path", through resolve. Passive
// entries (pssl:, ptcp:, punix:) and unix sockets name nothing to reach
// and stay as they are.
func translateOVNAddresses(list string, resolve func(string, int) (string, int, error)) (string, error) {
	var out []string
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		proto, rest, _ := strings.Cut(entry, ":")
		if proto != "ssl" && proto != "tcp" {
			out = append(out, entry)
			continue
		}
		host, portText, err := net.SplitHostPort(rest)
		if err != nil {
			return "", fmt.Errorf("OVN address %q: %w", entry, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil || port <= 0 || port > 65535 {
			return "", fmt.Errorf("OVN address %q: invalid port", entry)
		}
		host, port, err = resolve(host, port)
		if err != nil {
			return "", fmt.Errorf("OVN address %q: %w", entry, err)
		}
		out = append(out, proto+":"+net.JoinHostPort(host, strconv.Itoa(port)))
	}
	if len(out) == 0 {
		return "", fmt.Errorf("no address in %q", list)
	}
	return strings.Join(out, ","), nil
}

// clusterSource reads the Services and pods behind a cluster IP.
type clusterSource interface {
	Services(ctx context.Context) ([]corev1.Service, error)
	Pods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error)
}

// endpoint is a pod a Service can send to, as far as forwarding needs it.
type endpoint struct {
	namespace, name, ip string
	labels              map[string]string
	spec                *corev1.PodSpec
}

// resolver translates what a pod dials into what reaches the server here.
type resolver struct {
	ctx context.Context
	src clusterSource
}

// resolve implements Container.Resolve: a member's DNS name becomes its
// pod's own address; a Service's cluster IP and port become the selected
// pod's address and target port, since nothing routes cluster IPs here.
func (r resolver) resolve(host string, port int) (string, int, error) {
	if ns, pod, ok := memberPod(host); ok {
		return OwnPodAddress(ns, pod), port, nil
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || r.src == nil {
		return host, port, nil
	}
	svcs, err := r.src.Services(r.ctx)
	if err != nil {
		return "", 0, fmt.Errorf("listing Services: %w", err)
	}
	for i := range svcs {
		svc := &svcs[i]
		if !slices.Contains(svc.Spec.ClusterIPs, host) && svc.Spec.ClusterIP != host {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) == port && (sp.Protocol == "" || sp.Protocol == corev1.ProtocolTCP) {
				return r.serviceTarget(svc, sp)
			}
		}
		return "", 0, fmt.Errorf("the Service %s/%s has no TCP port %d", svc.Namespace, svc.Name, port)
	}
	// Not a cluster IP: an address that is reachable as it is.
	return host, port, nil
}

// serviceTarget returns the address and port a Service port sends to. A
// per-member Service whose member is being recreated still resolves, to
// the address the member will have again.
func (r resolver) serviceTarget(svc *corev1.Service, sp corev1.ServicePort) (string, int, error) {
	if len(svc.Spec.Selector) == 0 {
		return "", 0, fmt.Errorf("the Service %s/%s has no selector", svc.Namespace, svc.Name)
	}
	pods, err := r.src.Pods(r.ctx, svc.Namespace, svc.Spec.Selector)
	if err != nil {
		return "", 0, fmt.Errorf("listing the pods of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	var eps []endpoint
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
			eps = append(eps, endpoint{namespace: p.Namespace, name: p.Name, ip: p.Status.PodIP, labels: p.Labels, spec: &p.Spec})
		}
	}
	if ep, ok := pickEndpoint(svc, eps); ok {
		port, err := targetPort(sp, ep.spec)
		return ep.ip, port, err
	}
	if name, ok := svc.Spec.Selector[statefulSetPodNameLabel]; ok && sp.TargetPort.StrVal == "" {
		port, err := targetPort(sp, nil)
		return OwnPodAddress(svc.Namespace, name), port, err
	}
	return "", 0, fmt.Errorf("the Service %s/%s selects no running pod", svc.Namespace, svc.Name)
}

// pickEndpoint returns the first endpoint, by name, that the Service
// selects. One is enough: the Services this serves select one member each,
// and a client of a Service with several would reach any of them anyway.
func pickEndpoint(svc *corev1.Service, eps []endpoint) (endpoint, bool) {
	if len(svc.Spec.Selector) == 0 {
		return endpoint{}, false
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var found []endpoint
	for _, ep := range eps {
		if ep.namespace == svc.Namespace && sel.Matches(labels.Set(ep.labels)) {
			found = append(found, ep)
		}
	}
	if len(found) == 0 {
		return endpoint{}, false
	}
	slices.SortFunc(found, func(a, b endpoint) int { return strings.Compare(a.name, b.name) })
	return found[0], true
}

// targetPort resolves a Service port's target: a number, a named port of
// the pod's containers, or, when unset, the Service port itself.
func targetPort(sp corev1.ServicePort, spec *corev1.PodSpec) (int, error) {
	switch {
	case sp.TargetPort.StrVal != "":
		if spec != nil {
			for _, c := range spec.Containers {
				for _, p := range c.Ports {
					if p.Name == sp.TargetPort.StrVal {
						return int(p.ContainerPort), nil
					}
				}
			}
		}
		return 0, fmt.Errorf("no container port named %q", sp.TargetPort.StrVal)
	case sp.TargetPort.IntVal > 0:
		return int(sp.TargetPort.IntVal), nil
	default:
		return int(sp.Port), nil
	}
}
