package controlplane

import (
	"bytes"
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/webhook"
)

// projection is the outcome of a Nova apply that runs while the mirrors
// are written: the Nova as the cluster has it, or why it was not taken.
type projection struct {
	nova *novav1alpha1.Nova
	err  error
}

// PredictNova returns the Nova as an apply of spec leaves live: every
// field the ControlPlane sets comes from spec, the fields it never sets
// (logging, targetClusterRef) stay as live has them, and the generation
// moves on. It is pure, so the split is table-tested, and a test fails
// when NovaSpec gains a field the split does not name.
func PredictNova(live *novav1alpha1.Nova, spec novav1alpha1.NovaSpec) *novav1alpha1.Nova {
	n := live.DeepCopy()
	kept := n.Spec
	spec.DeepCopyInto(&n.Spec)
	n.Spec.Logging = kept.Logging
	n.Spec.TargetClusterRef = kept.TargetClusterRef
	if n.Spec.Replicas == nil {
		// The schema's default fills an unset count; the contract does
		// not read it, and the prediction keeps what the cluster holds.
		n.Spec.Replicas = kept.Replicas
	}
	if !equality.Semantic.DeepEqual(kept, n.Spec) {
		n.Generation++
	}
	return n
}

// DecideApplyAhead tells whether a pass may write the mirrors from the
// predicted Nova while its apply is in flight, which takes a custom
// resource write through a webhook off the path of a spec change to the
// compute clusters. refused is the generation whose apply was last refused
// after an ahead write, or 0. It may only when:
//   - the ControlPlane's generation is one NovaReady has not yet seen and
//     whose apply was not refused, so a change the Nova refused is never
//     written ahead a second time;
//   - the live Nova is this ControlPlane's and published a contract, so
//     the pass would deliver it rolling anyway;
//   - the apply changes the spec (else it is no write to wait for);
//   - no Keystone URL moves, which the Nova's webhook judges against the
//     operator's policy, and the Nova's own rules (webhook.ValidateNova)
//     accept the prediction, so the ahead write is one the Nova takes.
//
// It is pure, so the rules are table-tested.
func DecideApplyAhead(cp *c5c3v1alpha1.ControlPlane, live, predicted *novav1alpha1.Nova, refused int64) bool {
	seen := apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.NovaReadyCondition)
	switch {
	case seen != nil && seen.ObservedGeneration >= cp.Generation, refused == cp.Generation:
		return false
	case live == nil || !metav1.IsControlledBy(live, cp) || DecideNovaGate(live) == NovaInstalling:
		return false
	case equality.Semantic.DeepEqual(live.Spec, predicted.Spec):
		return false
	case keystoneURLs(live) != keystoneURLs(predicted):
		return false
	}
	return len(webhook.ValidateNova(predicted)) == 0
}

// keystoneURLs are the Keystone URLs of a Nova, the ones the Nova's
// webhook checks against the operator's policy when they change.
func keystoneURLs(n *novav1alpha1.Nova) [3]string {
	urls := [3]string{n.Spec.KeystoneEndpoint, n.Spec.KeystonePublicEndpoint}
	if rc := n.Spec.RemoteCompute; rc != nil {
		urls[2] = rc.KeystoneEndpoint
	}
	return urls
}

// applyAhead starts the apply of desired in the background when
// DecideApplyAhead allows, and returns the predicted Nova the pass goes on
// with; nil means the pass applies first, as before.
func (r *Reconciler) applyAhead(ctx context.Context, p *pass, desired novav1alpha1.NovaSpec) *novav1alpha1.Nova {
	live := &novav1alpha1.Nova{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.cp.Namespace, Name: NovaName(p.cp)}, live); err != nil {
		return nil
	}
	predicted := PredictNova(live, desired)
	var refused int64
	if g, ok := r.refusedAhead.Load(client.ObjectKeyFromObject(p.cp)); ok {
		refused = g.(int64)
	}
	if !DecideApplyAhead(p.cp, live, predicted, refused) {
		return nil
	}
	// The apply reads its owner while the pass writes the ControlPlane's
	// status, so it gets a copy of its own.
	owner, done := p.cp.DeepCopy(), make(chan projection, 1)
	go func() {
		n, err := r.applyNova(ctx, owner, desired)
		done <- projection{nova: n, err: err}
	}()
	p.projection, p.novaBefore = done, live
	return predicted
}

// awaitNova ends the writes the mirrors did not wait for: the input
// Secrets written beside the pass (deliverInput), and an apply started
// ahead of the mirrors. An apply that failed, refused by admission or for
// any other reason, puts the contract of the Nova as it was back on the
// clusters and is reported as the apply's error, and the next passes of
// that generation apply before they write; an
// applied Nova whose contract differs from the predicted one (a field
// another manager also owns, say) is delivered again at once. A failed
// input write is reported after that, and the next pass writes it again.
func (r *Reconciler) awaitNova(ctx context.Context, p *pass) (flow.Outcome, error) {
	inputErr := p.joinInputWrites()
	out, err := r.awaitProjection(ctx, p)
	if err == nil {
		err = inputErr
	}
	return out, err
}

// awaitProjection joins an apply started ahead of the mirrors, as
// awaitNova describes.
func (r *Reconciler) awaitProjection(ctx context.Context, p *pass) (flow.Outcome, error) {
	if p.projection == nil {
		return flow.Continue, nil
	}
	res := <-p.projection
	p.projection = nil
	written := p.mirrorContract
	if res.err != nil {
		r.refusedAhead.Store(client.ObjectKeyFromObject(p.cp), p.cp.Generation)
		p.nova = p.novaBefore
		if written != nil {
			_, _ = r.redeliver(ctx, p)
		}
		return flow.Continue, novaError(res.err)
	}
	p.nova = res.nova
	if written == nil {
		return flow.Continue, nil
	}
	contract, err := inputs.DeliveredNovaContract(ctx, deliveredReader{Reader: r.Client, namespace: p.nova.Namespace, secrets: p.delivered}, p.nova)
	if err == nil && maps.EqualFunc(contract, written, bytes.Equal) {
		return flow.Continue, nil
	}
	return r.redeliver(ctx, p)
}

// redeliver runs the mirror step again for p.nova, forgetting what the
// first run reported about the clusters.
func (r *Reconciler) redeliver(ctx context.Context, p *pass) (flow.Outcome, error) {
	p.failures, p.mirrorContract = nil, nil
	return r.reconcileMirrors(ctx, p)
}

// drainWrites waits for the writes started beside the pass when it
// stopped before awaitNova, so that no pass overlaps the writes of the one
// before.
func (p *pass) drainWrites() {
	_ = p.joinInputWrites()
	if p.projection != nil {
		<-p.projection
		p.projection = nil
	}
}
