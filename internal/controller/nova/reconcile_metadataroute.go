package nova

import (
	"context"
	"errors"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// routePoll asks again for the Gateway's answer, or whether the Gateway
// API got installed. Routes are not watched: the kind may not exist when
// the operator starts.
const routePoll = 15 * time.Second

// httpRouteKind is the kind the capability probe asks the cluster for.
var httpRouteKind = schema.GroupKind{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}

// reconcileMetadataRoute writes {nova}-metadata while spec.metadata.gateway
// is set and reports the Gateway's answer; without a gateway it deletes
// the route Anvil wrote. It runs before the database and the Deployments,
// because publishing the route depends on neither.
func (r *Reconciler) reconcileMetadataRoute(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova := p.nova
	served, err := servesHTTPRoutes(p.children)
	if err != nil {
		return flow.Continue, flow.Wait(novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.CapabilityProbeFailedReason, routePoll,
			"asking the cluster whether it serves HTTPRoutes failed: %s", err.Error())
	}
	if nova.Spec.Metadata.Gateway == nil {
		if served {
			route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: nova.Namespace, Name: MetadataRouteName(nova)}}
			if _, err := p.children.Delete(ctx, nova, route); err != nil {
				return flow.Continue, err
			}
		}
		conditionsOf(nova).Set(novav1alpha1.MetadataHTTPRouteReadyCondition, metav1.ConditionTrue, novav1alpha1.HTTPRouteNotRequiredReason,
			"spec.metadata.gateway is not set")
		return flow.Continue, nil
	}
	if !served {
		return flow.Continue, flow.Wait(novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.GatewayAPINotInstalledReason, routePoll,
			"spec.metadata.gateway is set, but the cluster serves no %s in %s; install the Gateway API", httpRouteKind.Kind, httpRouteKind.Group)
	}
	route := BuildMetadataRoute(nova)
	if err := p.children.Apply(ctx, nova, route); err != nil {
		var notOwned *childwriter.NotOwnedError
		if errors.As(err, &notOwned) {
			return flow.Continue, flow.Invalid(novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.HTTPRouteNotAcceptedReason, err)
		}
		return flow.Continue, err
	}
	verdict := DecideRoute(route, nova)
	if !verdict.Accepted {
		// Not a stop: the control plane runs whether or not it is
		// published, so the later steps go on.
		conditionsOf(nova).Set(novav1alpha1.MetadataHTTPRouteReadyCondition, metav1.ConditionFalse, novav1alpha1.HTTPRouteNotAcceptedReason, verdict.Message)
		return flow.Requeue(routePoll), nil
	}
	conditionsOf(nova).Set(novav1alpha1.MetadataHTTPRouteReadyCondition, metav1.ConditionTrue, novav1alpha1.HTTPRouteAcceptedReason,
		"Gateway "+nova.Spec.Metadata.Gateway.ParentRef.Name+" accepted "+MetadataRouteName(nova)+" for "+nova.Spec.Metadata.Gateway.Hostname)
	return flow.Continue, nil
}

// servesHTTPRoutes asks the children's cluster whether the Gateway API is
// installed. The mapper re-reads discovery for a kind it does not know, so
// a Gateway API installed after the operator started is found.
func servesHTTPRoutes(children *childwriter.Writer) (bool, error) {
	_, err := children.Client.RESTMapper().RESTMapping(httpRouteKind, gatewayv1.GroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case apimeta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}
