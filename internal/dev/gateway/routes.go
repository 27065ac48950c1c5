package gateway

import (
	"fmt"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// parentGateway returns the Gateway a parentRef names, or false when it
// names another kind of parent.
func parentGateway(routeNamespace string, ref gatewayv1.ParentReference) (types.NamespacedName, bool) {
	if ref.Group != nil && string(*ref.Group) != gatewayv1.GroupName {
		return types.NamespacedName{}, false
	}
	if ref.Kind != nil && *ref.Kind != "Gateway" {
		return types.NamespacedName{}, false
	}
	ns := routeNamespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, true
}

// attachRoute decides whether a route attaches to the listeners of a claimed
// Gateway through one parentRef, and to which. The checks run in the order
// the reasons are most useful to a reader: the named listener, then the
// listeners' allowedRoutes, then the hostnames.
func attachRoute(route *gatewayv1.HTTPRoute, ref gatewayv1.ParentReference, listeners []*listenerState, nsLabels map[string]labels.Set) (verdict, []*listenerState) {
	// The listeners the parentRef names: all of them unless it names a
	// section or a port. Listeners that cannot take routes (unsupported
	// protocol, conflicted) count as absent.
	var named []*listenerState
	for _, l := range listeners {
		if ref.SectionName != nil && *ref.SectionName != l.spec.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.spec.Port {
			continue
		}
		if l.attachable() {
			named = append(named, l)
		}
	}
	if len(named) == 0 {
		return fail(string(gatewayv1.RouteReasonNoMatchingParent), noMatchingParentMessage(ref)), nil
	}
	var allowed []*listenerState
	for _, l := range named {
		if listenerAllows(l, route.Namespace, nsLabels[route.Namespace]) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		return fail(string(gatewayv1.RouteReasonNotAllowedByListeners),
			fmt.Sprintf("No listener of Gateway %s admits HTTPRoutes from namespace %s.", ref.Name, route.Namespace)), nil
	}
	var attached []*listenerState
	for _, l := range allowed {
		if _, ok := effectiveHostnames(l.hostname, hostnames(route)); ok {
			attached = append(attached, l)
		}
	}
	if len(attached) == 0 {
		return fail(string(gatewayv1.RouteReasonNoMatchingListenerHostname),
			fmt.Sprintf("No hostname of the route matches a listener hostname of Gateway %s.", ref.Name)), nil
	}
	// Checked last: the reasons above tell a user their route is on the
	// wrong Gateway, which matters more than a feature we lack.
	if msg := unsupportedFeature(route); msg != "" {
		return fail(string(gatewayv1.RouteReasonUnsupportedValue), msg), nil
	}
	return pass(string(gatewayv1.RouteReasonAccepted), "Accepted by the dev gateway."), attached
}

// noMatchingParentMessage says which part of a parentRef found no listener.
func noMatchingParentMessage(ref gatewayv1.ParentReference) string {
	switch {
	case ref.SectionName != nil:
		return fmt.Sprintf("Gateway %s has no usable listener named %s on the requested port.", ref.Name, *ref.SectionName)
	case ref.Port != nil:
		return fmt.Sprintf("Gateway %s has no usable listener on port %d.", ref.Name, *ref.Port)
	}
	return fmt.Sprintf("Gateway %s has no usable listener.", ref.Name)
}

// hostnames returns a route's hostnames as plain strings.
func hostnames(route *gatewayv1.HTTPRoute) []string {
	out := make([]string, 0, len(route.Spec.Hostnames))
	for _, h := range route.Spec.Hostnames {
		out = append(out, string(h))
	}
	return out
}

// listenerAllows applies a listener's allowedRoutes to an HTTPRoute in a
// namespace with the given labels.
func listenerAllows(l *listenerState, routeNamespace string, nsLabels labels.Set) bool {
	if !slices.ContainsFunc(l.kinds, func(k gatewayv1.RouteGroupKind) bool { return k.Kind == httpRouteKind.Kind }) {
		return false
	}
	from := gatewayv1.NamespacesFromSame
	var selector *metav1.LabelSelector
	if ar := l.spec.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		selector = ar.Namespaces.Selector
	}
	// The Gateway API's default is Same: a Gateway admits only routes of
	// its own namespace unless it says otherwise.
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSame:
		return routeNamespace == l.gateway.Namespace
	case gatewayv1.NamespacesFromSelector:
		// A nil selector would select everything; the API requires one
		// with Selector, so a missing one admits nothing.
		sel, err := metav1.LabelSelectorAsSelector(selector)
		return err == nil && selector != nil && sel.Matches(nsLabels)
	}
	return false
}

// unsupportedFeature names the first feature of a route that the data plane
// would not honour. Such a route is refused rather than served differently
// from what it asks.
func unsupportedFeature(route *gatewayv1.HTTPRoute) string {
	for i, rule := range route.Spec.Rules {
		switch {
		case len(rule.Filters) > 0:
			return fmt.Sprintf("Rule %d: filters are not supported by the dev gateway.", i)
		case rule.Timeouts != nil, rule.Retry != nil, rule.SessionPersistence != nil:
			return fmt.Sprintf("Rule %d: timeouts, retries and session persistence are not supported by the dev gateway.", i)
		}
		for _, b := range rule.BackendRefs {
			if len(b.Filters) > 0 {
				return fmt.Sprintf("Rule %d: backend filters are not supported by the dev gateway.", i)
			}
		}
		for _, m := range rule.Matches {
			if m.Path != nil && m.Path.Type != nil && *m.Path.Type == gatewayv1.PathMatchRegularExpression && m.Path.Value != nil {
				if _, err := regexp.Compile(*m.Path.Value); err != nil {
					return fmt.Sprintf("Rule %d: path regular expression: %v.", i, err)
				}
			}
			for _, h := range m.Headers {
				if h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression {
					if _, err := regexp.Compile(h.Value); err != nil {
						return fmt.Sprintf("Rule %d: header regular expression: %v.", i, err)
					}
				}
			}
		}
	}
	return ""
}

// checkBackends decides a route's ResolvedRefs: every backendRef must name
// an existing Service of the route's namespace, on a port the Service has.
func checkBackends(route *gatewayv1.HTTPRoute, services map[types.NamespacedName]*corev1.Service) verdict {
	for i, rule := range route.Spec.Rules {
		for _, b := range rule.BackendRefs {
			if v := checkBackend(route.Namespace, b.BackendObjectReference, services); !v.ok {
				v.message = fmt.Sprintf("Rule %d: %s", i, v.message)
				return v
			}
		}
	}
	return pass(string(gatewayv1.RouteReasonResolvedRefs), "All references are resolved.")
}

// checkBackend decides one backendRef. Only same-namespace Services are
// resolved: ReferenceGrant is not implemented, and granting silently would
// be wrong.
func checkBackend(namespace string, ref gatewayv1.BackendObjectReference, services map[types.NamespacedName]*corev1.Service) verdict {
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Service") {
		return fail(string(gatewayv1.RouteReasonInvalidKind), fmt.Sprintf("backend %s: only core Services are supported.", ref.Name))
	}
	if ref.Namespace != nil && string(*ref.Namespace) != namespace {
		return fail(string(gatewayv1.RouteReasonRefNotPermitted),
			fmt.Sprintf("Service %s/%s is in another namespace; the dev gateway does not implement ReferenceGrant.", *ref.Namespace, ref.Name))
	}
	svc := services[types.NamespacedName{Namespace: namespace, Name: string(ref.Name)}]
	if svc == nil {
		return fail(string(gatewayv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s/%s does not exist.", namespace, ref.Name))
	}
	// The API's validation requires a port for a Service; it must also be
	// one the Service has, or there is no endpoint port to resolve.
	if ref.Port == nil || servicePort(svc, *ref.Port) == nil {
		return fail(string(gatewayv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s/%s has no port %s.", namespace, ref.Name, portString(ref.Port)))
	}
	return pass(string(gatewayv1.RouteReasonResolvedRefs), "")
}

// portString renders an optional port for a message.
func portString(p *gatewayv1.PortNumber) string {
	if p == nil {
		return "(none given)"
	}
	return fmt.Sprint(*p)
}

// servicePort returns the Service's port with the given number, or nil.
func servicePort(svc *corev1.Service, port int32) *corev1.ServicePort {
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			return &svc.Spec.Ports[i]
		}
	}
	return nil
}
