package podrunner

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// nodeHandler is the virtual-kubelet PodLifecycleHandler of one node. It
// also implements PodNotifier, so that the pod controller takes status
// changes as they happen instead of polling GetPodStatus.
type nodeHandler struct {
	// ctx is the runner's lifetime; pods outlive the calls that create
	// them, so their processes hang off this context, not the call's.
	ctx     context.Context
	node    string
	nodeDir string
	images  ImageMap
	src     objectSource
	env     map[string]string
	log     logr.Logger
	// cluster reads Services and pods for translating cluster IPs; nil
	// when the source cannot, as in unit tests.
	cluster clusterSource
	// changed, if set, is called whenever the node's pods change, so that
	// the NodePort forwarder looks again.
	changed func()
	// netns is the node's network namespace, nil when the node shares
	// the host's network.
	netns *nodeNetwork

	mu       sync.Mutex
	pods     map[string]*podRun
	notifyFn func(*corev1.Pod)

	// running counts the pod goroutines, so that the runner can wait for
	// every process to stop.
	running sync.WaitGroup
}

// newNodeHandler returns the handler of one node.
func newNodeHandler(ctx context.Context, node, nodeDir string, images ImageMap, src objectSource, env map[string]string, log logr.Logger) *nodeHandler {
	h := &nodeHandler{
		ctx: ctx, node: node, nodeDir: nodeDir, images: images, src: src, env: env,
		log:  log.WithValues("node", node),
		pods: map[string]*podRun{},
	}
	if cs, ok := src.(clusterSource); ok {
		h.cluster = cs
	}
	return h
}

// notifyChanged tells the forwarder, if any, that the node's pods changed.
func (h *nodeHandler) notifyChanged() {
	if h.changed != nil {
		h.changed()
	}
}

// endpoints returns the node's pods that run processes, with the labels
// they have now, for the NodePort forwarder.
func (h *nodeHandler) endpoints() []endpoint {
	h.mu.Lock()
	runs := make([]*podRun, 0, len(h.pods))
	for _, r := range h.pods {
		runs = append(runs, r)
	}
	h.mu.Unlock()
	var out []endpoint
	for _, r := range runs {
		if r.mode != PodRunnerProcess || r.isDeleted() {
			continue
		}
		r.mu.Lock()
		out = append(out, endpoint{
			namespace: r.spec.Namespace, name: r.spec.Name, ip: r.podIP,
			labels: maps.Clone(r.pod.Labels), spec: &r.spec.Spec,
		})
		r.mu.Unlock()
	}
	return out
}

// netnsName is the name of the node's network namespace, "" without one.
func (h *nodeHandler) netnsName() string {
	if h.netns == nil {
		return ""
	}
	return h.netns.name
}

// start starts a container's program: the relays it asks for first, on a
// node with a namespace of its own, then its BeforeStart, then the
// process.
func (h *nodeHandler) start(ctx context.Context, c prepared) (*process, error) {
	if h.netns != nil && len(c.cmd.Relays) > 0 {
		if err := h.netns.relay.ensure(ctx, c.cmd.Relays); err != nil {
			return nil, err
		}
	}
	if c.cmd.BeforeStart != nil {
		if err := c.cmd.BeforeStart(logr.NewContext(ctx, h.log)); err != nil {
			return nil, fmt.Errorf("before the start: %w", err)
		}
	}
	return startProcess(c.cmd, c.env, c.dir, c.log)
}

// hostRoot is the directory the node's hostPaths live under.
func (h *nodeHandler) hostRoot() string { return filepath.Join(h.nodeDir, hostPathsDirName) }

// claimRoot is the directory the node's claim volumes live under.
func (h *nodeHandler) claimRoot() string { return filepath.Join(h.nodeDir, claimsDirName) }

// podDir is the work directory of a pod on this node.
func (h *nodeHandler) podDir(pod *corev1.Pod) string {
	return filepath.Join(h.nodeDir, podsDirName, podDirName(pod))
}

// lookup returns the run of a pod by namespace and name.
func (h *nodeHandler) lookup(namespace, name string) *podRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pods[namespace+"/"+name]
}

// forget drops a run that was deleted, unless the name already belongs to
// a newer pod.
func (h *nodeHandler) forget(r *podRun) {
	h.mu.Lock()
	if h.pods[r.key] == r {
		delete(h.pods, r.key)
	}
	h.mu.Unlock()
	h.notifyChanged()
}

// notify hands a pod's status to the pod controller.
func (h *nodeHandler) notify(pod *corev1.Pod) {
	h.mu.Lock()
	fn := h.notifyFn
	h.mu.Unlock()
	if fn != nil {
		fn(pod)
	}
}

// NotifyPods registers the pod controller's callback for status changes.
func (h *nodeHandler) NotifyPods(_ context.Context, fn func(*corev1.Pod)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notifyFn = fn
}

// CreatePod starts a pod. It returns at once: the pod is prepared and run
// in the background, and its progress is reported through NotifyPods. An
// error here would make the pod controller fail a pod with restartPolicy
// Never outright, while a missing Secret is something to wait for.
func (h *nodeHandler) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	if old := h.lookup(pod.Namespace, pod.Name); old != nil {
		if old.spec.UID == pod.UID && !old.isDeleted() {
			old.refresh(pod)
			return nil
		}
		// An earlier pod of the same name is still stopping; the new one
		// starts when it is gone, as with the kubelet.
		old.delete(nil)
		select {
		case <-old.cleaned:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r := newPodRun(h, pod)
	h.mu.Lock()
	h.pods[r.key] = r
	h.mu.Unlock()
	r.log.Info("starting a pod", "mode", r.mode, "dir", r.dir, "podIP", r.podIP)
	r.publish()
	h.notifyChanged()
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		r.run()
	}()
	return nil
}

// UpdatePod takes over changes of a pod's metadata. A changed container
// image is not applied to a running process; the runner serves test and
// devstack clusters, whose pods are replaced rather than updated.
func (h *nodeHandler) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	r := h.lookup(pod.Namespace, pod.Name)
	if r == nil || r.spec.UID != pod.UID || r.isDeleted() {
		return h.CreatePod(ctx, pod)
	}
	r.refresh(pod)
	return nil
}

// DeletePod stops a pod's processes, SIGTERM first and SIGKILL after the
// grace period, and removes its work directory. It returns at once and
// reports the terminal status through NotifyPods when the processes are
// gone. It may be called several times for one pod.
func (h *nodeHandler) DeletePod(_ context.Context, pod *corev1.Pod) error {
	r := h.lookup(pod.Namespace, pod.Name)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not on node %s", pod.Namespace, pod.Name, h.node)
	}
	r.delete(pod)
	return nil
}

// GetPod returns a pod as last reported. A pod being deleted is reported as
// not found: the pod controller compares what GetPod returns with a new pod
// of the same name only by spec, and would otherwise mistake a recreated pod
// for the one that is stopping.
func (h *nodeHandler) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r := h.lookup(namespace, name)
	if r == nil || r.isDeleted() {
		return nil, errdefs.NotFoundf("pod %s/%s is not on node %s", namespace, name, h.node)
	}
	if pod := r.snapshot(); pod != nil {
		return pod, nil
	}
	return nil, errdefs.NotFoundf("pod %s/%s has not been reported yet", namespace, name)
}

// GetPodStatus returns a pod's status as last reported.
func (h *nodeHandler) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := h.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod the node runs.
func (h *nodeHandler) GetPods(context.Context) ([]*corev1.Pod, error) {
	h.mu.Lock()
	runs := make([]*podRun, 0, len(h.pods))
	for _, r := range h.pods {
		runs = append(runs, r)
	}
	h.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(runs))
	for _, r := range runs {
		if pod := r.snapshot(); pod != nil && !r.isDeleted() {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// apiSource reads Secrets and ConfigMaps straight from the API server.
type apiSource struct {
	client kubernetes.Interface
}

// Secret implements objectSource.
func (s apiSource) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ConfigMap implements objectSource.
func (s apiSource) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ServiceAccountToken implements tokenIssuer: a token of the pod's service
// account, bound to the pod, so the apiserver invalidates it when the pod
// goes. The runner writes it once, when the pod starts, and does not renew
// it as a kubelet would; the apiserver lends the default projection's
// 3607 s tokens a year (--service-account-extend-token-expiration), which
// outlasts a devstack.
func (s apiSource) ServiceAccountToken(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	sa := cmp.Or(pod.Spec.ServiceAccountName, "default")
	got, err := s.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return got.Status.Token, nil
}

// NodeAnnotations implements nodeSource.
func (s apiSource) NodeAnnotations(ctx context.Context, name string) (map[string]string, error) {
	node, err := s.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return node.Annotations, nil
}

// Services implements clusterSource: every Service of the cluster, since a
// cluster IP names no namespace.
func (s apiSource) Services(ctx context.Context) ([]corev1.Service, error) {
	list, err := s.client.CoreV1().Services(corev1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Pods implements clusterSource.
func (s apiSource) Pods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	list, err := s.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selector).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
