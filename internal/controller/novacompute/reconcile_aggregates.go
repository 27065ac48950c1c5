package novacompute

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// reconcileAggregates keeps one aggregate per zone of the pool's nodes and
// tenant_filter_tests, each marked as this Nova's, and deletes marked ones
// no pool of the Nova needs any more. It never adds a host: the hypervisor
// operator does that while it onboards a node.
func (r *Reconciler) reconcileAggregates(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	zones, zoneless := PoolZones(pool.Status.Nodes)
	cloud, err := p.openCloud(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "authenticating as the Nova's service user", err)
	}
	all, err := cloud.ListAggregates(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "listing aggregates", err)
	}
	byName := map[string]openstack.Aggregate{}
	for _, a := range all {
		byName[a.Name] = a
	}
	marker := pool.Namespace + "/" + pool.Spec.NovaRef.Name

	want := map[string]string{} // aggregate -> availability zone
	if !p.deleting {
		for _, z := range zones {
			want[z] = z
		}
		want[novav1alpha1.TenantFilterTestsAggregate] = ""
	}
	var mismatches []string
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		az := want[name]
		if a, ok := byName[name]; ok {
			if a.Zone != az {
				mismatches = append(mismatches, fmt.Sprintf("aggregate %s has availability zone %q, want %q", name, a.Zone, az))
			}
			continue
		}
		created, err := cloud.CreateAggregate(ctx, name, az)
		if openstack.IsConflict(err) {
			return flow.Continue, flow.Wait(novav1alpha1.AggregatesReadyCondition, novav1alpha1.WaitingForAggregateReason, shortRequeue,
				"aggregate %s was created by someone else at the same time", name)
		}
		if err != nil {
			return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "creating aggregate "+name, err)
		}
		if err := cloud.SetAggregateMetadata(ctx, created.ID, map[string]string{novav1alpha1.AggregateMarkerKey: marker}); err != nil {
			// An unmarked aggregate would never be reaped; take it back.
			_ = cloud.DeleteAggregate(ctx, created.ID)
			return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "marking aggregate "+name, err)
		}
		created.Metadata = map[string]string{novav1alpha1.AggregateMarkerKey: marker}
		byName[name] = created
		where := "without an availability zone"
		if az != "" {
			where = "in availability zone " + az
		}
		r.event(pool, aggregateRef(name), false, novav1alpha1.AggregateCreatedEvent, "Create", "Created aggregate %s %s", name, where)
	}

	p.aggregates = byName
	required := RequiredAggregates(p.novaPools, pool, pool.Status.Nodes, p.deleting)
	for _, a := range all {
		decision, foreign := DecideReap(a, marker, required)
		switch decision {
		case DeleteAggregate:
			if err := cloud.DeleteAggregate(ctx, a.ID); err != nil && !openstack.IsNotFound(err) {
				return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "deleting aggregate "+a.Name, err)
			}
			delete(byName, a.Name)
			r.event(pool, aggregateRef(a.Name), false, novav1alpha1.AggregateDeletedEvent, "Delete", "Deleted aggregate %s: no pool of Nova %s needs it and it has no host", a.Name, marker)
		case KeepForeignMetadata:
			// A state that lasts is reported once per process, not on
			// every pass.
			if !r.onboarding.once(fmt.Sprintf("kept/%s/%d/%s", marker, a.ID, strings.Join(foreign, ","))) {
				continue
			}
			r.event(pool, aggregateRef(a.Name), true, novav1alpha1.AggregateKeptEvent, "Delete",
				"Kept aggregate %s although no pool needs it: it carries metadata the pool did not set (%s)", a.Name, strings.Join(foreign, ", "))
		}
	}

	switch {
	case len(zoneless) > 0:
		setCondition(pool, novav1alpha1.AggregatesReadyCondition, metav1.ConditionFalse, novav1alpha1.NodesWithoutZoneReason,
			"nodes without the topology.kubernetes.io/zone label: "+strings.Join(zoneless, ", "))
	case len(mismatches) > 0:
		setCondition(pool, novav1alpha1.AggregatesReadyCondition, metav1.ConditionFalse, novav1alpha1.AggregateZoneMismatchReason,
			strings.Join(mismatches, "; "))
	default:
		var outside []string
		for _, n := range pool.Status.Nodes {
			if !heldForZones(n.Phase) || n.Zone == "" {
				continue
			}
			if slices.Contains(byName[n.Zone].Hosts, n.Name) {
				r.onboarding.inZoneAggregate(pool, n, r.now())
				continue
			}
			outside = append(outside, n.Name)
		}
		if len(outside) > 0 {
			setCondition(pool, novav1alpha1.AggregatesReadyCondition, metav1.ConditionTrue, novav1alpha1.NodesOutsideZoneAggregateReason,
				"the aggregates exist; the hypervisor operator has not put these hosts into their zone aggregate yet: "+strings.Join(outside, ", "))
		} else {
			setCondition(pool, novav1alpha1.AggregatesReadyCondition, metav1.ConditionTrue, novav1alpha1.AggregatesEnsuredReason,
				fmt.Sprintf("%d zone aggregate(s) and %s exist", len(zones), novav1alpha1.TenantFilterTestsAggregate))
		}
	}
	return flow.Continue, nil
}

// computeAPIError stops the pass at a failed OpenStack call, reported on
// condition and retried in 30 s rather than with backoff: the cloud, not
// the operator, has to recover. The message carries no credential:
// openstack errors hold only the operation, status and request id.
func (p *pass) computeAPIError(condition, what string, err error) (flow.Outcome, error) {
	return flow.Continue, &flow.StepError{Condition: condition, Reason: novav1alpha1.ComputeAPIErrorReason,
		Err: fmt.Errorf("%s: %w", what, err), RequeueAfter: apiErrorRequeue}
}
