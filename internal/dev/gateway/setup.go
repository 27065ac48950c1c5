package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// DefaultControllerName is the spec.controllerName of the GatewayClasses
// this implementation claims unless told otherwise.
const DefaultControllerName = "anvil.c5c3.io/dev-gateway"

// DefaultListenAddress is where the data plane listens unless told
// otherwise: loopback, since the devstack's clients are local processes.
const DefaultListenAddress = "127.0.0.1"

// Options configure the controller and the data plane.
type Options struct {
	// ControllerName selects the GatewayClasses to claim; it defaults to
	// DefaultControllerName.
	ControllerName string
	// ListenAddress is the IP address every listener is served on; it
	// defaults to DefaultListenAddress.
	ListenAddress string
	// PortMap maps listener ports to host ports; unmapped ports are
	// served on the same number.
	PortMap PortMap
	// Logger receives the controller's and the data plane's logs. It never
	// sees request headers or bodies.
	Logger logr.Logger
}

func (o *Options) defaults() error {
	o.ControllerName = cmp.Or(o.ControllerName, DefaultControllerName)
	o.ListenAddress = cmp.Or(o.ListenAddress, DefaultListenAddress)
	if net.ParseIP(o.ListenAddress) == nil {
		return fmt.Errorf("listen address %q is not an IP address", o.ListenAddress)
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return nil
}

// NewScheme returns a scheme with the built-in kinds and the Gateway API's
// v1 kinds.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}

// CacheOptions restricts the manager's Secret cache to TLS Secrets: those
// are the only ones a listener can use, and the gateway has no business
// holding every other credential of the cluster in memory. Likewise only
// Pods on 127.0.0.1 are cached, the only ones it resolves directly (see
// package doc).
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Field: fields.OneTermEqualSelector("type", string(corev1.SecretTypeTLS))},
		&corev1.Pod{}:    {Field: fields.OneTermEqualSelector("status.podIP", loopbackPodIP)},
	}}
}

// loopbackPodIP is the address the devstack's pod runner reports for every
// pod.
const loopbackPodIP = "127.0.0.1"

// Run runs the controller and the data plane against the apiserver of cfg
// until ctx ends. The Gateway API CRDs must be installed.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 NewScheme(),
		Logger:                 opts.Logger,
		Cache:                  CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	if err := Setup(mgr, opts); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Setup adds the controller and the data plane to a manager whose scheme
// holds NewScheme's kinds. Use CacheOptions for the manager's cache.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	dp := newDataPlane(opts.ListenAddress, opts.Logger.WithName("dataplane"))
	if err := mgr.Add(dp); err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient(), opts: opts, dp: dp, interest: &interest{}, log: opts.Logger.WithName("controller")}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "gateway-api"}}}
	})
	// Spec changes of the Gateway API objects matter; this controller's
	// own status writes do not, and are filtered out.
	spec := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dev-gateway").
		Watches(&gatewayv1.GatewayClass{}, all, spec).
		Watches(&gatewayv1.Gateway{}, all, spec).
		Watches(&gatewayv1.HTTPRoute{}, all, spec).
		Watches(&corev1.Namespace{}, all, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&corev1.Secret{}, all, builder.WithPredicates(r.interest.predicate(secretKey))).
		Watches(&corev1.Service{}, all, builder.WithPredicates(r.interest.predicate(serviceKey))).
		Watches(&discoveryv1.EndpointSlice{}, all, builder.WithPredicates(r.interest.predicate(sliceServiceKey))).
		Watches(&corev1.Pod{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(r.interest.selectsPod))).
		Complete(r)
}

// interest holds the Secrets, Services and Pod selectors the last decision
// depended on, so that changes to every other Secret, Service,
// EndpointSlice or Pod are ignored.
type interest struct {
	mu        sync.RWMutex
	secrets   map[types.NamespacedName]bool
	services  map[types.NamespacedName]bool
	selectors map[string][]labels.Selector
}

func (i *interest) set(secrets, services map[types.NamespacedName]bool, selectors map[string][]labels.Selector) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.secrets, i.services, i.selectors = secrets, services, selectors
}

// selectsPod tells whether a backend Service of interest selects the Pod.
func (i *interest) selectsPod(o client.Object) bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	for _, sel := range i.selectors[o.GetNamespace()] {
		if sel.Matches(labels.Set(o.GetLabels())) {
			return true
		}
	}
	return false
}

// keyFunc says which set an object belongs to and under which key.
type keyFunc func(client.Object) (secret bool, key types.NamespacedName, ok bool)

func secretKey(o client.Object) (bool, types.NamespacedName, bool) {
	return true, client.ObjectKeyFromObject(o), true
}

func serviceKey(o client.Object) (bool, types.NamespacedName, bool) {
	return false, client.ObjectKeyFromObject(o), true
}

func sliceServiceKey(o client.Object) (bool, types.NamespacedName, bool) {
	svc := o.GetLabels()[discoveryv1.LabelServiceName]
	return false, types.NamespacedName{Namespace: o.GetNamespace(), Name: svc}, svc != ""
}

func (i *interest) predicate(key keyFunc) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		secret, k, ok := key(o)
		if !ok {
			return false
		}
		i.mu.RLock()
		defer i.mu.RUnlock()
		if secret {
			return i.secrets[k]
		}
		return i.services[k]
	})
}
