package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// deliveredCopy is one kind of Secret a ControlPlane delivers to compute
// clusters: its name, and the label that marks it as a copy.
type deliveredCopy struct {
	name  string
	label string
}

// deliveredCopies are the Secrets a ControlPlane may have delivered to a
// compute cluster, all in its own namespace there: the compute contract's
// mirror, the hypervisor operator's auth copy and the metadata shared
// secret's copy.
func deliveredCopies(cp *c5c3v1alpha1.ControlPlane) []deliveredCopy {
	return []deliveredCopy{
		{MirrorName(cp), c5c3v1alpha1.ComputeConfigMirrorLabel},
		{HypervisorOperatorAuthName(cp), c5c3v1alpha1.ComputeConfigMirrorLabel},
		{MetadataAgentSecretName(cp), neutronv1alpha1.MetadataSharedSecretMirrorLabel},
	}
}

// holdDeliveries adds the deliveries finalizer before a pass writes its
// first copy onto a compute cluster, so that a deleted ControlPlane stays
// until its teardown has removed every copy.
func (r *Reconciler) holdDeliveries(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) error {
	if err := flow.AddFinalizer(ctx, r.Client, cp, c5c3v1alpha1.DeliveriesFinalizer); err != nil {
		return fmt.Errorf("adding the finalizer %s: %w", c5c3v1alpha1.DeliveriesFinalizer, err)
	}
	return nil
}

// reapDeliveries runs while a ControlPlane is deleted. It removes every copy
// this ControlPlane delivered from every registered compute cluster whose
// scope admits its namespace, each only if it carries its copy label and
// this ControlPlane's ownership labels, so a Secret someone else made
// under the same name stays. A registered cluster that cannot be reached
// holds the finalizer and the pass waits, naming it: the copies carry
// credentials, and leaving them behind unseen would be worse than a slow
// deletion. Unregistering the cluster releases it. The other clusters are
// reaped meanwhile.
func (r *Reconciler) reapDeliveries(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp := p.cp
	if !controllerutil.ContainsFinalizer(cp, c5c3v1alpha1.DeliveriesFinalizer) {
		return flow.Continue, nil
	}
	clusters, err := r.Registry.Registered(ctx, cp.Namespace)
	if err != nil {
		return flow.Continue, err
	}
	// Every cluster is tried on every pass, so one that fails delays
	// none of the others.
	var unreachable []string
	var failed []error
	for _, cluster := range clusters {
		children, err := r.Registry.WriterFor(cluster, nil)
		if err != nil {
			unreachable = append(unreachable, cluster)
			continue
		}
		if err := r.reapOn(ctx, cp, cluster, children); err != nil {
			failed = append(failed, err)
			continue
		}
		cp.Status.Deliveries = slices.DeleteFunc(cp.Status.Deliveries, func(d c5c3v1alpha1.DeliveredCopy) bool { return d.Cluster == cluster })
	}
	switch {
	case len(failed) > 0:
		return flow.Continue, errors.Join(failed...)
	case len(unreachable) > 0:
		return flow.Continue, flow.Wait(c5c3v1alpha1.NovaReadyCondition, anvilmeta.TargetClusterUnavailableReason, waitRequeue,
			"waiting to remove the delivered copies from %s: unreachable; unregistering a cluster gives its copies up",
			strings.Join(unreachable, ", "))
	}
	// Every registered cluster was reaped, and one that is not registered
	// cannot be reached again: the inventory has nothing left to track.
	cp.Status.Deliveries = nil
	return flow.Continue, flow.RemoveFinalizer(ctx, r.Client, cp, c5c3v1alpha1.DeliveriesFinalizer)
}

// reapOn deletes this ControlPlane's copies on one cluster, recording a
// Normal DeliveredCopyReaped for each one deleted.
func (r *Reconciler) reapOn(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string, children *childwriter.Writer) error {
	for _, c := range deliveredCopies(cp) {
		deleted, err := r.deleteCopy(ctx, cp, children, c)
		if err != nil {
			return fmt.Errorf("on %s: deleting Secret %s/%s: %w", cluster, cp.Namespace, c.name, err)
		}
		if deleted {
			r.Recorder.Eventf(cp, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: cp.Namespace, Name: c.name},
				corev1.EventTypeNormal, c5c3v1alpha1.DeliveredCopyReapedEvent, "Delete",
				"deleted the delivered copy %s/%s on %s: the ControlPlane is being deleted", cp.Namespace, c.name, cluster)
		}
	}
	return nil
}

// deleteCopy deletes one delivered copy on a cluster if it carries its copy
// label and this ControlPlane's ownership labels; a Secret of the same name
// someone else made is never touched. It tells whether it deleted one.
func (r *Reconciler) deleteCopy(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, children *childwriter.Writer, c deliveredCopy) (bool, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cp.Namespace, Name: c.name}}
	return children.DeleteIf(ctx, secret, func(live client.Object) bool {
		return live.GetLabels()[c.label] == "true" && childwriter.Controls(cp, live, r.Scheme)
	})
}
