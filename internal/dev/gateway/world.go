package gateway

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// world is one consistent read of everything the controller decides on,
// from the manager's cache.
type world struct {
	// classes are the GatewayClasses this controller claims.
	classes []*gatewayv1.GatewayClass
	// gateways are the Gateways of those classes, oldest first, so that
	// the older of two conflicting listeners keeps its port.
	gateways []*gatewayv1.Gateway
	// routes are all HTTPRoutes, oldest first: the Gateway API's
	// tie-break between equally specific rules.
	routes   []*gatewayv1.HTTPRoute
	nsLabels map[string]labels.Set
	services map[types.NamespacedName]*corev1.Service
	// slices are the EndpointSlices of each Service.
	slices map[types.NamespacedName][]*discoveryv1.EndpointSlice
	// pods are the loopback Pods by namespace; see readyEndpoints.
	pods map[string][]*corev1.Pod
}

// load reads the world from the cache.
func (r *reconciler) load(ctx context.Context) (*world, error) {
	w := &world{
		nsLabels: map[string]labels.Set{},
		services: map[types.NamespacedName]*corev1.Service{},
		slices:   map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		pods:     map[string][]*corev1.Pod{},
	}
	classes := &gatewayv1.GatewayClassList{}
	gateways := &gatewayv1.GatewayList{}
	routes := &gatewayv1.HTTPRouteList{}
	namespaces := &corev1.NamespaceList{}
	services := &corev1.ServiceList{}
	slicesList := &discoveryv1.EndpointSliceList{}
	pods := &corev1.PodList{}
	for _, list := range []client.ObjectList{classes, gateways, routes, namespaces, services, slicesList, pods} {
		if err := r.client.List(ctx, list); err != nil {
			return nil, err
		}
	}
	claimed := map[string]bool{}
	for i := range classes.Items {
		if string(classes.Items[i].Spec.ControllerName) == r.opts.ControllerName {
			w.classes = append(w.classes, &classes.Items[i])
			claimed[classes.Items[i].Name] = true
		}
	}
	for i := range gateways.Items {
		if claimed[string(gateways.Items[i].Spec.GatewayClassName)] {
			w.gateways = append(w.gateways, &gateways.Items[i])
		}
	}
	sortByAge(w.gateways)
	for i := range routes.Items {
		w.routes = append(w.routes, &routes.Items[i])
	}
	sortByAge(w.routes)
	for _, ns := range namespaces.Items {
		w.nsLabels[ns.Name] = ns.Labels
	}
	for i := range services.Items {
		w.services[client.ObjectKeyFromObject(&services.Items[i])] = &services.Items[i]
	}
	for i := range slicesList.Items {
		s := &slicesList.Items[i]
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
			key := types.NamespacedName{Namespace: s.Namespace, Name: svc}
			w.slices[key] = append(w.slices[key], s)
		}
	}
	for i := range pods.Items {
		w.pods[pods.Items[i].Namespace] = append(w.pods[pods.Items[i].Namespace], &pods.Items[i])
	}
	return w, nil
}

// sortByAge orders objects oldest first, then by namespace and name.
func sortByAge[T client.Object](objs []T) {
	slices.SortStableFunc(objs, func(a, b T) int {
		if c := a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
}

// secrets returns a lookup of TLS Secrets in the cache, which holds only
// Secrets of type kubernetes.io/tls.
func (r *reconciler) secrets(ctx context.Context) secretLookup {
	return func(key types.NamespacedName) *corev1.Secret {
		s := &corev1.Secret{}
		if err := r.client.Get(ctx, key, s); err != nil || s.Type != corev1.SecretTypeTLS {
			return nil
		}
		return s
	}
}
