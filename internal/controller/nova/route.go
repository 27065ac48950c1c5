package nova

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// MetadataRouteName is the HTTPRoute that publishes the metadata API:
// {nova}-metadata, like the Service it points at.
func MetadataRouteName(nova *novav1alpha1.Nova) string { return nova.Name + "-metadata" }

// metadataComponent is the metadata API among the rollout groups.
var metadataComponent = rolloutGroups[2][1]

// BuildMetadataRoute renders {nova}-metadata for spec.metadata.gateway:
// every path on the hostname goes to the metadata Service. It is pure.
func BuildMetadataRoute(nova *novav1alpha1.Nova) *gatewayv1.HTTPRoute {
	gw := nova.Spec.Metadata.Gateway
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{
			Name: MetadataRouteName(nova), Namespace: nova.Namespace,
			Labels: componentLabels(nova, metadataComponent),
		},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parentRef(gw.ParentRef)}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(gw.Hostname)},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
					Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/"),
				}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{
						Name: gatewayv1.ObjectName(ComponentName(nova, metadataComponent)),
						Port: ptr.To(gatewayv1.PortNumber(metadataPort)),
					},
				}}},
			}},
		},
	}
}

// parentRef turns the spec's reference into the route's; an empty
// namespace stays empty, which the Gateway API reads as the route's own.
func parentRef(ref novav1alpha1.GatewayParentRef) gatewayv1.ParentReference {
	p := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(ref.Name)}
	if ref.Namespace != "" {
		p.Namespace = ptr.To(gatewayv1.Namespace(ref.Namespace))
	}
	if ref.SectionName != "" {
		p.SectionName = ptr.To(gatewayv1.SectionName(ref.SectionName))
	}
	return p
}

// RouteVerdict is what the route's status says about the Gateway's answer.
type RouteVerdict struct {
	// Accepted is true when the Gateway accepted the route.
	Accepted bool
	// Message explains a route not (yet) accepted, with the Gateway's own
	// reason and message when it gave one.
	Message string
}

// DecideRoute reads the Gateway's answer for the route's one parent from
// its status. A status for another parent, or one older than the route's
// generation, does not count: the Gateway has not answered this spec yet.
func DecideRoute(route *gatewayv1.HTTPRoute, nova *novav1alpha1.Nova) RouteVerdict {
	want := nova.Spec.Metadata.Gateway.ParentRef
	for _, ps := range route.Status.Parents {
		if string(ps.ParentRef.Name) != want.Name ||
			string(ptr.Deref(ps.ParentRef.Namespace, gatewayv1.Namespace(route.Namespace))) != cmp.Or(want.Namespace, route.Namespace) ||
			string(ptr.Deref(ps.ParentRef.SectionName, "")) != want.SectionName {
			continue
		}
		for _, c := range ps.Conditions {
			if c.Type != string(gatewayv1.RouteConditionAccepted) || c.ObservedGeneration < route.Generation {
				continue
			}
			if c.Status == metav1.ConditionTrue {
				return RouteVerdict{Accepted: true}
			}
			return RouteVerdict{Message: "Gateway " + want.Name + " refused the route: " + c.Reason + ": " + c.Message}
		}
	}
	return RouteVerdict{Message: "waiting for Gateway " + want.Name + " to accept the route"}
}
