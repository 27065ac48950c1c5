package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// bindRetry is how soon a port that could not be bound is tried again.
const bindRetry = 10 * time.Second

// reconciler decides everything in one pass: a route's status depends on
// its Gateway's listeners and a listener's status counts its routes, so the
// controller has a single work item and recomputes the whole picture from
// the cache each time, which is cheap at development scale.
type reconciler struct {
	client   client.Client
	opts     Options
	dp       *DataPlane
	interest *interest
	log      logr.Logger
}

// Reconcile decides the status of every claimed object, reloads the data
// plane, and writes the statuses that changed.
func (r *reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	w, err := r.load(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	listeners, byGateway := decideListeners(w, r.opts.PortMap, r.secrets(ctx))
	routes := decideRoutes(w, listeners, byGateway)
	failed := r.dp.apply(buildConfigs(w, listeners, routes))
	if len(failed) > 0 {
		// Listeners on a port that cannot be bound are not served, so
		// routes must not count as attached there: decide again without
		// them.
		for _, l := range listeners {
			l.bindErr = failed[l.hostPort]
		}
		routes = decideRoutes(w, listeners, byGateway)
		r.dp.apply(buildConfigs(w, listeners, routes))
	}
	r.interest.set(interestOf(w, routes))

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	var errs []error
	for _, gc := range w.classes {
		errs = append(errs, r.writeClass(ctx, gc, now))
	}
	for _, gw := range w.gateways {
		errs = append(errs, r.writeGateway(ctx, gw, byGateway[client.ObjectKeyFromObject(gw)], now))
	}
	decided := map[types.NamespacedName]*routeDecision{}
	for _, d := range routes {
		decided[client.ObjectKeyFromObject(d.route)] = d
	}
	for _, route := range w.routes {
		errs = append(errs, r.writeRoute(ctx, route, decided[client.ObjectKeyFromObject(route)], now))
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if len(failed) > 0 {
		return reconcile.Result{RequeueAfter: bindRetry}, nil
	}
	return reconcile.Result{}, nil
}

func (r *reconciler) writeClass(ctx context.Context, gc *gatewayv1.GatewayClass, now metav1.Time) error {
	desired := gc.Status.DeepCopy()
	desired.Conditions = mergeConditions(gc.Status.Conditions, classConditions(gc), now)
	if equality.Semantic.DeepEqual(&gc.Status, desired) {
		return nil
	}
	obj := gc.DeepCopy()
	obj.Status = *desired
	r.log.Info("updating GatewayClass status", "gatewayClass", gc.Name)
	return client.IgnoreNotFound(r.client.Status().Update(ctx, obj))
}

func (r *reconciler) writeGateway(ctx context.Context, gw *gatewayv1.Gateway, listeners []*listenerState, now metav1.Time) error {
	desired := mergeGatewayStatus(gw.Status, gatewayStatus(gw, listeners, r.opts.ListenAddress), now)
	if equality.Semantic.DeepEqual(gw.Status, desired) {
		return nil
	}
	obj := gw.DeepCopy()
	obj.Status = desired
	r.log.Info("updating Gateway status", "gateway", client.ObjectKeyFromObject(gw))
	return client.IgnoreNotFound(r.client.Status().Update(ctx, obj))
}

// writeRoute updates a route's status.parents. A route that names no
// claimed Gateway only loses entries of ours, if it had any.
func (r *reconciler) writeRoute(ctx context.Context, route *gatewayv1.HTTPRoute, d *routeDecision, now metav1.Time) error {
	desired := routeParents(route.Status.Parents, d, r.opts.ControllerName, now)
	if equality.Semantic.DeepEqual(route.Status.Parents, desired) {
		return nil
	}
	obj := route.DeepCopy()
	obj.Status.Parents = desired
	r.log.Info("updating HTTPRoute status", "httpRoute", client.ObjectKeyFromObject(route))
	return client.IgnoreNotFound(r.client.Status().Update(ctx, obj))
}

// interestOf names the Secrets and Services whose changes can change a
// decision: the certificates of the claimed Gateways and the backends of
// the routes attached to them, whether or not they exist yet; and the
// selectors of those backends that exist, for their Pods.
func interestOf(w *world, routes []*routeDecision) (secrets, services map[types.NamespacedName]bool, selectors map[string][]labels.Selector) {
	secrets, services = map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	selectors = map[string][]labels.Selector{}
	for _, gw := range w.gateways {
		for _, l := range gw.Spec.Listeners {
			if l.TLS == nil {
				continue
			}
			for _, ref := range l.TLS.CertificateRefs {
				secrets[types.NamespacedName{Namespace: gw.Namespace, Name: string(ref.Name)}] = true
			}
		}
	}
	for _, d := range routes {
		for _, rule := range d.route.Spec.Rules {
			for _, b := range rule.BackendRefs {
				key := types.NamespacedName{Namespace: d.route.Namespace, Name: string(b.Name)}
				services[key] = true
				if svc := w.services[key]; svc != nil && len(svc.Spec.Selector) > 0 {
					selectors[key.Namespace] = append(selectors[key.Namespace], labels.SelectorFromSet(svc.Spec.Selector))
				}
			}
		}
	}
	return secrets, services, selectors
}
