package novacompute

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	hypervisorv1 "github.com/anvil/anvil/internal/hypervisor/v1"
)

// reconcileTraits creates every trait the pool names in Placement and
// writes each node's list into spec.customTraits of its Hypervisor, the
// hypervisor operator's object for the node, which applies the list to
// the node's resource provider. The pool reads the result back from the
// Hypervisor's status.
func (r *Reconciler) reconcileTraits(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	all := AllTraits(pool)
	if len(all) == 0 || p.deleting {
		conditionsOf(pool).Set(novav1alpha1.TraitsReadyCondition, metav1.ConditionTrue, novav1alpha1.NoTraitsReason, "the pool declares no custom traits")
		return flow.Continue, nil
	}
	if bad := InvalidTraitPaths(pool); len(bad) > 0 {
		// The paths, not the values: a value that is no trait may be
		// anything the user pasted. The other steps keep running, and the
		// spec change that fixes it brings the next pass.
		conditionsOf(pool).Set(novav1alpha1.TraitsReadyCondition, metav1.ConditionFalse, novav1alpha1.InvalidTraitsReason,
			strings.Join(bad, ", ")+": not a custom trait (CUSTOM_ followed by upper-case letters, digits and underscores, "+
				"at most "+strconv.Itoa(novav1alpha1.MaxTraitLength)+" characters); no trait is created or written until the spec is fixed")
		return flow.Continue, nil
	}
	cloud, err := p.openCloud(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.TraitsReadyCondition, "authenticating as the Nova's service user", err)
	}
	for _, t := range all {
		if err := cloud.EnsureTrait(ctx, t); err != nil {
			// Reported on the condition and retried on a timer, as every
			// failed OpenStack call is.
			return flow.Continue, &flow.StepError{Condition: novav1alpha1.TraitsReadyCondition, Reason: novav1alpha1.TraitsErrorReason,
				Err: fmt.Errorf("creating trait %s in Placement: %w", t, err), RequeueAfter: apiErrorRequeue}
		}
	}
	annotated, waiting, err := r.writeHypervisorTraits(ctx, p)
	if err != nil {
		return flow.Continue, err
	}
	sort.Strings(annotated)
	switch {
	case len(annotated) > 0:
		conditionsOf(pool).Set(novav1alpha1.TraitsReadyCondition, metav1.ConditionFalse, novav1alpha1.NodesWithCustomTraitsAnnotationReason,
			"remove the "+novav1alpha1.CustomTraitsAnnotation+" annotation from: "+strings.Join(annotated, ", "))
		return flow.Requeue(nodeWaitRequeue), nil
	case len(waiting) > 0:
		conditionsOf(pool).Set(novav1alpha1.TraitsReadyCondition, metav1.ConditionFalse, novav1alpha1.WaitingForHypervisorOperatorReason,
			"the hypervisor operator has not applied the traits of: "+strings.Join(waiting, ", "))
		return flow.Requeue(TraitsWaitRequeue(r.traits.at(pool.UID), r.now())), nil
	}
	conditionsOf(pool).Set(novav1alpha1.TraitsReadyCondition, metav1.ConditionTrue, novav1alpha1.TraitsAppliedReason,
		fmt.Sprintf("every node carries its custom traits (%s)", strings.Join(all, ", ")))
	return flow.Continue, nil
}

// writeHypervisorTraits writes each held node's custom traits into its
// Hypervisor, where they differ, and returns the nodes whose annotation
// forbids it and those whose traits the hypervisor operator has yet to
// apply.
func (r *Reconciler) writeHypervisorTraits(ctx context.Context, p *pass) (annotated, waiting []string, _ error) {
	for _, e := range p.pool.Status.Nodes {
		if !heldForZones(e.Phase) {
			continue
		}
		if n := p.nodes[e.Name]; n != nil {
			if _, ok := n.Annotations[novav1alpha1.CustomTraitsAnnotation]; ok {
				// The hypervisor operator would overwrite the list from
				// the annotation on every pass; leave the node alone.
				annotated = append(annotated, e.Name)
				continue
			}
		}
		want := NodeTraits(p.pool, e.Name)
		hv := &hypervisorv1.Hypervisor{}
		err := p.cluster.Reader.Get(ctx, client.ObjectKey{Name: e.Name}, hv)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			// The hypervisor operator creates the Hypervisor once it sees
			// the node; until then there is nothing to write.
			waiting = append(waiting, e.Name+" (no Hypervisor yet)")
			continue
		case err != nil:
			return nil, nil, flow.Wait(novav1alpha1.TraitsReadyCondition, novav1alpha1.TraitsErrorReason, nodeWaitRequeue,
				"reading Hypervisor %s failed: %s", e.Name, apierrors.ReasonForError(err))
		}
		if !slices.Equal(hv.Spec.CustomTraits, want) {
			patch := client.MergeFrom(hv.DeepCopy())
			hv.Spec.CustomTraits = want
			if err := p.cluster.Client.Patch(ctx, hv, patch); err != nil {
				return nil, nil, flow.Wait(novav1alpha1.TraitsReadyCondition, novav1alpha1.TraitsErrorReason, nodeWaitRequeue,
					"writing the custom traits of Hypervisor %s failed: %s", e.Name, apierrors.ReasonForError(err))
			}
			r.traits.wrote(p.pool.UID, r.now())
		}
		if !containsAll(hv.Status.Traits, want) {
			waiting = append(waiting, e.Name)
		}
	}
	return annotated, waiting, nil
}
