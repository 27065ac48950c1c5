package gateway

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// parentDecision is the outcome of one parentRef of a route that names a
// claimed Gateway.
type parentDecision struct {
	ref      gatewayv1.ParentReference
	accepted verdict
	resolved verdict
	attached []*listenerState
}

// routeDecision holds the outcomes of one route's parentRefs that this
// controller answers for; a route without any is not ours.
type routeDecision struct {
	route   *gatewayv1.HTTPRoute
	parents []parentDecision
}

// decideListeners checks every listener of the claimed Gateways and marks
// conflicts between them. It returns them in Gateway and listener order,
// and indexed by Gateway.
func decideListeners(w *world, ports PortMap, secrets secretLookup) ([]*listenerState, map[types.NamespacedName][]*listenerState) {
	var all []*listenerState
	byGateway := map[types.NamespacedName][]*listenerState{}
	for _, gw := range w.gateways {
		key := client.ObjectKeyFromObject(gw)
		byGateway[key] = []*listenerState{}
		for i := range gw.Spec.Listeners {
			l := &listenerState{gateway: gw, spec: &gw.Spec.Listeners[i], hostPort: ports.HostPort(gw.Spec.Listeners[i].Port)}
			checkListener(l, secrets)
			all = append(all, l)
			byGateway[key] = append(byGateway[key], l)
		}
	}
	markConflicts(all)
	return all, byGateway
}

// decideRoutes attaches every route to the listeners of the claimed
// Gateways its parentRefs name, and counts each listener's attached routes.
func decideRoutes(w *world, listeners []*listenerState, byGateway map[types.NamespacedName][]*listenerState) []*routeDecision {
	for _, l := range listeners {
		l.attached = 0
	}
	var out []*routeDecision
	for _, route := range w.routes {
		d := &routeDecision{route: route}
		// ResolvedRefs is about the route's own references, so it is the
		// same for every parent.
		resolved := checkBackends(route, w.services)
		// A route counts once per listener even when two parentRefs
		// reach the same listener.
		counted := map[*listenerState]bool{}
		for _, ref := range route.Spec.ParentRefs {
			key, ok := parentGateway(route.Namespace, ref)
			if !ok {
				continue
			}
			// Parents of other implementations get no entry of ours.
			gwListeners, ours := byGateway[key]
			if !ours {
				continue
			}
			accepted, attached := attachRoute(route, ref, gwListeners, w.nsLabels)
			for _, l := range attached {
				if !counted[l] {
					counted[l] = true
					l.attached++
				}
			}
			d.parents = append(d.parents, parentDecision{ref: ref, accepted: accepted, resolved: resolved, attached: attached})
		}
		if len(d.parents) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// buildConfigs turns the programmed listeners and their attached routes into
// the data plane's configuration, by host port.
func buildConfigs(w *world, listeners []*listenerState, routes []*routeDecision) map[int32]*portConfig {
	served := map[*listenerState]*servedListener{}
	configs := map[int32]*portConfig{}
	for _, l := range listeners {
		if !l.programmed() {
			continue
		}
		s := &servedListener{name: l.gateway.Namespace + "/" + l.gateway.Name + "/" + string(l.spec.Name), hostname: l.hostname, cert: l.cert}
		served[l] = s
		c := configs[l.hostPort]
		if c == nil {
			c = &portConfig{protocol: l.spec.Protocol}
			configs[l.hostPort] = c
		}
		c.listeners = append(c.listeners, s)
	}
	for _, d := range routes {
		done := map[*listenerState]bool{}
		for _, p := range d.parents {
			for _, l := range p.attached {
				if s := served[l]; s != nil && !done[l] {
					done[l] = true
					s.rules = append(s.rules, compileRoute(w, d.route, l)...)
				}
			}
		}
	}
	return configs
}

// compileRoute compiles a route's rules for one listener it attaches to.
func compileRoute(w *world, route *gatewayv1.HTTPRoute, l *listenerState) []*compiledRule {
	hosts, _ := effectiveHostnames(l.hostname, hostnames(route))
	key := client.ObjectKeyFromObject(route)
	var out []*compiledRule
	for _, rule := range route.Spec.Rules {
		backends := compileBackends(w, route.Namespace, rule.BackendRefs)
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for _, m := range matches {
			out = append(out, &compiledRule{route: key, hostnames: hosts, match: compileMatch(m), backends: backends})
		}
	}
	return out
}

// compileBackends resolves a rule's backendRefs to ready addresses. A
// reference that does not resolve stays in the list as invalid, so that its
// share of the traffic gets 500 as the Gateway API asks.
func compileBackends(w *world, namespace string, refs []gatewayv1.HTTPBackendRef) []backend {
	out := make([]backend, 0, len(refs))
	for _, ref := range refs {
		b := backend{name: namespace + "/" + string(ref.Name), weight: 1}
		if ref.Weight != nil {
			b.weight = *ref.Weight
		}
		if !checkBackend(namespace, ref.BackendObjectReference, w.services).ok {
			b.invalid = true
		} else {
			key := types.NamespacedName{Namespace: namespace, Name: string(ref.Name)}
			b.endpoints = readyEndpoints(w.services[key], *ref.Port, w.slices[key], w.pods[namespace])
		}
		out = append(out, b)
	}
	return out
}
