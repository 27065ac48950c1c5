package ovncentral

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// reconcileEndpoints publishes where both databases answer: cluster IPs for
// consumers on the central's cluster, and node addresses for those on
// other clusters while a database is externally reachable. The Services
// and pods are read live, because an address a consumer dials must not
// come from a stale cache.
func (r *Reconciler) reconcileEndpoints(ctx context.Context, p *pass) (flow.Outcome, error) {
	c := p.central
	obs := make([]DatabaseObservation, 0, len(databases))
	for _, d := range databases {
		o, err := r.observeDatabase(ctx, p, d)
		if err != nil {
			return flow.Continue, err
		}
		obs = append(obs, o)
	}
	addrs, pending := DecideEndpoints(obs)
	if pending != "" {
		for _, d := range databases {
			st := d.Status(c)
			st.InternalDBAddress, st.DBAddress = "", ""
		}
		// What runs after the addresses reports that it waits for them,
		// rather than a verdict from before the addresses went away.
		for _, cond := range []string{ovnv1alpha1.NorthdReadyCondition, ovnv1alpha1.RelayReadyCondition, ovnv1alpha1.BackupReadyCondition} {
			conditionsOf(c).Set(cond, metav1.ConditionFalse, ovnv1alpha1.WaitingForEndpointsReason, "waiting for the databases' addresses")
		}
		return flow.Continue, flow.Wait(ovnv1alpha1.EndpointsReadyCondition, ovnv1alpha1.EndpointsPendingReason, RequeueRaftWait, "%s", pending)
	}
	for i, d := range databases {
		st := d.Status(c)
		st.InternalDBAddress, st.DBAddress = addrs[i].Internal, addrs[i].External
	}
	conditionsOf(c).Set(ovnv1alpha1.EndpointsReadyCondition, metav1.ConditionTrue, ovnv1alpha1.EndpointsPublishedReason,
		"northbound at "+c.Status.Northbound.InternalDBAddress+", southbound at "+c.Status.Southbound.InternalDBAddress)
	return flow.Continue, nil
}

// observeDatabase reads each member's Service and pod.
func (r *Reconciler) observeDatabase(ctx context.Context, p *pass, d Database) (DatabaseObservation, error) {
	c := p.central
	spec := d.Spec(c)
	o := DatabaseObservation{Short: d.Short, Port: d.Port, ExternallyReachable: spec.ExternallyReachable, NodePortBase: d.NodePortBase(c)}
	for i := range spec.ResolvedReplicas() {
		key := client.ObjectKey{Namespace: c.Namespace, Name: d.MemberName(c, i)}
		var m MemberObservation
		svc := &corev1.Service{}
		switch err := p.live.Get(ctx, key, svc); {
		case err == nil:
			m.ClusterIP = svc.Spec.ClusterIP
		case !apierrors.IsNotFound(err):
			return o, fmt.Errorf("reading Service %s: %w", key.Name, err)
		}
		pod := &corev1.Pod{}
		switch err := p.live.Get(ctx, key, pod); {
		case err == nil && pod.DeletionTimestamp.IsZero():
			m.HostIP = pod.Status.HostIP
		case err != nil && !apierrors.IsNotFound(err):
			return o, fmt.Errorf("reading pod %s: %w", key.Name, err)
		}
		o.Members = append(o.Members, m)
	}
	return o, nil
}
