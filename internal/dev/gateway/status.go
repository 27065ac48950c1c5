package gateway

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// classConditions are the conditions of a claimed GatewayClass: it has no
// parameters to check, so it is always accepted.
func classConditions(gc *gatewayv1.GatewayClass) []metav1.Condition {
	return []metav1.Condition{condition(string(gatewayv1.GatewayClassConditionStatusAccepted),
		pass(string(gatewayv1.GatewayClassReasonAccepted), "Claimed by the dev gateway."), gc.Generation)}
}

// listenerConditions are the conditions of one listener's status.
func listenerConditions(l *listenerState, generation int64) []metav1.Condition {
	accepted := l.accepted
	if l.bindErr != nil {
		accepted = fail(string(gatewayv1.ListenerReasonPortUnavailable), fmt.Sprintf("Cannot listen on host port %d: %v.", l.hostPort, l.bindErr))
	}
	programmed := pass(string(gatewayv1.ListenerReasonProgrammed), fmt.Sprintf("Served on host port %d.", l.hostPort))
	switch {
	case !accepted.ok:
		programmed = fail(string(gatewayv1.ListenerReasonInvalid), "The listener is not accepted.")
	case !l.conflict.ok:
		programmed = fail(string(gatewayv1.ListenerReasonInvalid), "The listener conflicts with another listener.")
	case !l.resolved.ok:
		programmed = fail(string(gatewayv1.ListenerReasonInvalid), "The listener's references do not resolve.")
	}
	// Conflicted is the one condition whose healthy status is False.
	conflicted := condition(string(gatewayv1.ListenerConditionConflicted), l.conflict, generation)
	conflicted.Status = metav1.ConditionTrue
	if l.conflict.ok {
		conflicted.Status = metav1.ConditionFalse
	}
	return []metav1.Condition{
		condition(string(gatewayv1.ListenerConditionAccepted), accepted, generation),
		condition(string(gatewayv1.ListenerConditionProgrammed), programmed, generation),
		condition(string(gatewayv1.ListenerConditionResolvedRefs), l.resolved, generation),
		conflicted,
	}
}

// gatewayStatus is the desired status of a claimed Gateway, before
// transition times are merged. address is where the data plane listens.
func gatewayStatus(gw *gatewayv1.Gateway, listeners []*listenerState, address string) gatewayv1.GatewayStatus {
	st := gatewayv1.GatewayStatus{}
	accepted, programmed := 0, 0
	for _, l := range listeners {
		conds := listenerConditions(l, gw.Generation)
		if conds[0].Status == metav1.ConditionTrue {
			accepted++
		}
		if conds[1].Status == metav1.ConditionTrue {
			programmed++
		}
		kinds := l.kinds
		if kinds == nil {
			kinds = []gatewayv1.RouteGroupKind{}
		}
		st.Listeners = append(st.Listeners, gatewayv1.ListenerStatus{
			Name: l.spec.Name, SupportedKinds: kinds, AttachedRoutes: l.attached, Conditions: conds,
		})
	}
	// Accepted with some invalid listeners is still Accepted, with a reason
	// that points at status.listeners, as the API describes.
	acc := pass(string(gatewayv1.GatewayReasonAccepted), "Accepted by the dev gateway.")
	switch {
	case unsupportedAddress(gw, address) != "":
		acc = fail(string(gatewayv1.GatewayReasonUnsupportedAddress), unsupportedAddress(gw, address))
	case accepted == 0 && len(listeners) > 0:
		acc = fail(string(gatewayv1.GatewayReasonListenersNotValid), "No listener is accepted.")
	case accepted < len(listeners):
		acc = pass(string(gatewayv1.GatewayReasonListenersNotValid), "Some listeners are not accepted; see status.listeners.")
	}
	prog := pass(string(gatewayv1.GatewayReasonProgrammed), fmt.Sprintf("%d of %d listeners are served on %s.", programmed, len(listeners), address))
	if !acc.ok || programmed == 0 {
		prog = fail(string(gatewayv1.GatewayReasonInvalid), "No listener is served; see status.listeners.")
	} else {
		// The address clients reach, before any port mapping.
		ipType := gatewayv1.IPAddressType
		st.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &ipType, Value: address}}
	}
	st.Conditions = []metav1.Condition{
		condition(string(gatewayv1.GatewayConditionAccepted), acc, gw.Generation),
		condition(string(gatewayv1.GatewayConditionProgrammed), prog, gw.Generation),
	}
	return st
}

// unsupportedAddress explains why the Gateway's requested addresses cannot
// be served; every listener is on the one listen address.
func unsupportedAddress(gw *gatewayv1.Gateway, address string) string {
	for _, a := range gw.Spec.Addresses {
		if (a.Type != nil && *a.Type != gatewayv1.IPAddressType) || a.Value != address {
			return fmt.Sprintf("The dev gateway only serves on %s.", address)
		}
	}
	return ""
}

// mergeGatewayStatus carries the transition times of current into desired.
func mergeGatewayStatus(current, desired gatewayv1.GatewayStatus, now metav1.Time) gatewayv1.GatewayStatus {
	desired.Conditions = mergeConditions(current.Conditions, desired.Conditions, now)
	for i := range desired.Listeners {
		// Listeners are matched by name: their order in the spec may
		// change without their history changing.
		var old []metav1.Condition
		for _, c := range current.Listeners {
			if c.Name == desired.Listeners[i].Name {
				old = c.Conditions
			}
		}
		desired.Listeners[i].Conditions = mergeConditions(old, desired.Listeners[i].Conditions, now)
	}
	return desired
}

// routeParents returns a route's status.parents with this controller's
// entries replaced by decisions, keeping other controllers' entries where
// they were. An entry of ours whose parentRef is gone is dropped.
func routeParents(current []gatewayv1.RouteParentStatus, d *routeDecision, controller string, now metav1.Time) []gatewayv1.RouteParentStatus {
	// Never nil: status.parents is a required list.
	out := []gatewayv1.RouteParentStatus{}
	for _, p := range current {
		if string(p.ControllerName) != controller {
			out = append(out, p)
		}
	}
	if d == nil {
		return out
	}
	for _, pd := range d.parents {
		desired := []metav1.Condition{
			condition(string(gatewayv1.RouteConditionAccepted), pd.accepted, d.route.Generation),
			condition(string(gatewayv1.RouteConditionResolvedRefs), pd.resolved, d.route.Generation),
		}
		var old []metav1.Condition
		for _, p := range current {
			if string(p.ControllerName) == controller && reflect.DeepEqual(p.ParentRef, pd.ref) {
				old = p.Conditions
			}
		}
		out = append(out, gatewayv1.RouteParentStatus{
			ParentRef: pd.ref, ControllerName: gatewayv1.GatewayController(controller), Conditions: mergeConditions(old, desired, now),
		})
	}
	return out
}
