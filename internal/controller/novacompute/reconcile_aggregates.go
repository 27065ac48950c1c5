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
	// One pool's pass at a time per Nova: two would both create a new
	// zone's aggregate, and one could reap the aggregate the other just
	// created for nodes it has not written into its status yet.
	unlock, err := r.perNova.lock(ctx, "aggregates/"+pool.Namespace+"/"+pool.Spec.NovaRef.Name)
	if err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.AggregatesReadyCondition, novav1alpha1.ComputeAPIErrorReason,
			fmt.Errorf("waiting for another pool's aggregates step: %w", err))
	}
	defer unlock()
	cloud, err := p.openCloud(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "authenticating as the Nova's service user", err)
	}
	listed, err := cloud.ListAggregates(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "listing aggregates", err)
	}
	run := &aggregatesRun{r: r, p: p, cloud: cloud, marker: pool.Namespace + "/" + pool.Spec.NovaRef.Name,
		byName: map[string]openstack.Aggregate{}}
	for _, a := range listed {
		run.byName[a.Name] = a
	}
	zones, zoneless := PoolZones(pool.Status.Nodes)
	mismatches, err := run.createAggregates(ctx, wantedAggregates(zones, p.deleting))
	if err != nil {
		return flow.Continue, err
	}
	// The same map, so that later steps see the aggregates the reaping leaves.
	p.aggregates = run.byName
	if err := run.reapAggregates(ctx, listed); err != nil {
		return flow.Continue, err
	}
	run.setAggregatesCondition(zones, zoneless, mismatches)
	return flow.Continue, nil
}

// aggregatesRun is one Aggregates step: the cloud it talks to, the marker
// of the pool's Nova and the aggregates by name, as listed and then changed
// by the step.
type aggregatesRun struct {
	r      *Reconciler
	p      *pass
	cloud  Cloud
	marker string
	byName map[string]openstack.Aggregate
}

// wantedAggregates maps each aggregate the pool needs to its availability
// zone: one per zone and tenant_filter_tests without one, none while the
// pool is being deleted.
func wantedAggregates(zones []string, deleting bool) map[string]string {
	want := map[string]string{}
	if deleting {
		return want
	}
	for _, z := range zones {
		want[z] = z
	}
	want[novav1alpha1.TenantFilterTestsAggregate] = ""
	return want
}

// createAggregates creates the wanted aggregates that do not exist, in name
// order, and returns how existing ones differ in their zone, which only a
// person may fix.
func (x *aggregatesRun) createAggregates(ctx context.Context, want map[string]string) ([]string, error) {
	var mismatches []string
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		az := want[name]
		if a, ok := x.byName[name]; ok {
			if a.Zone != az {
				mismatches = append(mismatches, fmt.Sprintf("aggregate %s has availability zone %q, want %q", name, a.Zone, az))
			}
			continue
		}
		if err := x.createAggregate(ctx, name, az); err != nil {
			return nil, err
		}
	}
	return mismatches, nil
}

// createAggregate creates one aggregate and marks it as the Nova's, so that
// the pools of the Nova may reap it once none needs it.
func (x *aggregatesRun) createAggregate(ctx context.Context, name, az string) error {
	created, err := x.cloud.CreateAggregate(ctx, name, az)
	if openstack.IsConflict(err) {
		return flow.Wait(novav1alpha1.AggregatesReadyCondition, novav1alpha1.WaitingForAggregateReason, shortRequeue,
			"aggregate %s was created by someone else at the same time", name)
	}
	if err != nil {
		_, err = x.p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "creating aggregate "+name, err)
		return err
	}
	if err := x.cloud.SetAggregateMetadata(ctx, created.ID, map[string]string{novav1alpha1.AggregateMarkerKey: x.marker}); err != nil {
		// An unmarked aggregate would never be reaped; take it back.
		_ = x.cloud.DeleteAggregate(ctx, created.ID)
		_, err = x.p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "marking aggregate "+name, err)
		return err
	}
	created.Metadata = map[string]string{novav1alpha1.AggregateMarkerKey: x.marker}
	x.byName[name] = created
	where := "without an availability zone"
	if az != "" {
		where = "in availability zone " + az
	}
	x.r.event(x.p.pool, aggregateRef(name), false, novav1alpha1.AggregateCreatedEvent, "Create", "Created aggregate %s %s", name, where)
	return nil
}

// reapAggregates deletes the listed aggregates DecideReap gives up, and
// reports those it keeps for metadata the pool did not set.
func (x *aggregatesRun) reapAggregates(ctx context.Context, listed []openstack.Aggregate) error {
	pool := x.p.pool
	pools, err := x.r.claimedPools(ctx, pool)
	if err != nil {
		return flow.Fail(novav1alpha1.AggregatesReadyCondition, novav1alpha1.NovaComputeListErrorReason,
			fmt.Errorf("listing the pools of Nova %s: %w", pool.Spec.NovaRef.Name, err))
	}
	required := RequiredAggregates(pools, pool, pool.Status.Nodes, x.p.deleting)
	for _, a := range listed {
		decision, foreign := DecideReap(a, x.marker, required)
		switch decision {
		case DeleteAggregate:
			if err := x.cloud.DeleteAggregate(ctx, a.ID); err != nil && !openstack.IsNotFound(err) {
				_, err = x.p.computeAPIError(novav1alpha1.AggregatesReadyCondition, "deleting aggregate "+a.Name, err)
				return err
			}
			delete(x.byName, a.Name)
			x.r.event(pool, aggregateRef(a.Name), false, novav1alpha1.AggregateDeletedEvent, "Delete", "Deleted aggregate %s: no pool of Nova %s needs it and it has no host", a.Name, x.marker)
		case KeepForeignMetadata:
			// A state that lasts is reported once per process, not on
			// every pass.
			if !x.r.onboarding.once(fmt.Sprintf("kept/%s/%d/%s", x.marker, a.ID, strings.Join(foreign, ","))) {
				continue
			}
			x.r.event(pool, aggregateRef(a.Name), true, novav1alpha1.AggregateKeptEvent, "Delete",
				"Kept aggregate %s although no pool needs it: it carries metadata the pool did not set (%s)", a.Name, strings.Join(foreign, ", "))
		}
	}
	return nil
}

// setAggregatesCondition reports what keeps the aggregates from serving the
// pool (nodes without a zone, zones that differ) before which hosts the
// hypervisor operator has yet to put into their zone aggregate.
func (x *aggregatesRun) setAggregatesCondition(zones, zoneless, mismatches []string) {
	pool := x.p.pool
	switch {
	case len(zoneless) > 0:
		conditionsOf(pool).Set(novav1alpha1.AggregatesReadyCondition, metav1.ConditionFalse, novav1alpha1.NodesWithoutZoneReason,
			"nodes without the topology.kubernetes.io/zone label: "+strings.Join(zoneless, ", "))
	case len(mismatches) > 0:
		conditionsOf(pool).Set(novav1alpha1.AggregatesReadyCondition, metav1.ConditionFalse, novav1alpha1.AggregateZoneMismatchReason,
			strings.Join(mismatches, "; "))
	default:
		if outside := x.nodesOutsideZoneAggregate(); len(outside) > 0 {
			conditionsOf(pool).Set(novav1alpha1.AggregatesReadyCondition, metav1.ConditionTrue, novav1alpha1.NodesOutsideZoneAggregateReason,
				"the aggregates exist; the hypervisor operator has not put these hosts into their zone aggregate yet: "+strings.Join(outside, ", "))
		} else {
			conditionsOf(pool).Set(novav1alpha1.AggregatesReadyCondition, metav1.ConditionTrue, novav1alpha1.AggregatesEnsuredReason,
				fmt.Sprintf("%d zone aggregate(s) and %s exist", len(zones), novav1alpha1.TenantFilterTestsAggregate))
		}
	}
}

// nodesOutsideZoneAggregate lists the zoned nodes whose host is not yet in
// its zone aggregate, and records for the onboarding metrics when the
// others got there.
func (x *aggregatesRun) nodesOutsideZoneAggregate() []string {
	var outside []string
	for _, n := range x.p.pool.Status.Nodes {
		if !heldForZones(n.Phase) || n.Zone == "" {
			continue
		}
		if slices.Contains(x.byName[n.Zone].Hosts, n.Name) {
			x.r.onboarding.inZoneAggregate(x.p.pool, n, x.r.now())
			continue
		}
		outside = append(outside, n.Name)
	}
	return outside
}

// computeAPIError stops the pass at a failed OpenStack call, reported on
// condition and retried in 30 s rather than with backoff: the cloud, not
// the operator, has to recover. The message carries no credential:
// openstack errors hold only the operation, status and request id.
func (p *pass) computeAPIError(condition, what string, err error) (flow.Outcome, error) {
	return flow.Continue, &flow.StepError{Condition: condition, Reason: novav1alpha1.ComputeAPIErrorReason,
		Err: fmt.Errorf("%s: %w", what, err), RequeueAfter: apiErrorRequeue}
}
