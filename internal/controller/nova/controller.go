// Package nova reconciles Nova objects. It runs two steps. The
// ComputeConfig step publishes the compute contract: everything a
// hypervisor needs from the control plane, as the Secret
// {nova}-compute-config, and, while remoteCompute is set, its remote form
// {nova}-remote-compute-config. The ManageConfig step publishes
// {nova}-manage-config, the database configuration nova-manage reads, while
// the Nova declares its databases.
package nova

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/targetcluster"
)

// placedResync re-renders a Nova whose children live on another cluster.
// Its input Secrets live there too, unlabelled, so no watch sees them change.
const placedResync = 30 * time.Second

// childKinds are the kinds a Nova writes onto its children cluster; a
// placed Nova's teardown sweeps them.
var childKinds = []schema.GroupVersionKind{{Version: "v1", Kind: "Secret"}}

// Reconciler reconciles Nova objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry resolves targetClusterRef; nil turns placed Novas off.
	Registry *targetcluster.Registry
	// Teardown removes a placed Nova's children on deletion.
	Teardown *targetcluster.Teardown
	// Recorder records the events of condition transitions.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one Nova's contract up to date. It reads like a table of
// contents: get, defer the status patch, resolve where the children live,
// take the deletion branch, then run the steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	nova := &novav1alpha1.Nova{}
	if err := r.Client.Get(ctx, req.NamespacedName, nova); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := nova.DeepCopy()
	defer func() {
		if err := r.patchStatus(ctx, before, nova); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()

	if !nova.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, nova)
	}

	children, err := r.resolveChildren(nova)
	if err != nil {
		// Nothing is written and no finalizer is added until the cluster
		// resolves; the registry queues the Nova again when it does.
		setUnavailable(nova, err)
		return ctrl.Result{RequeueAfter: targetcluster.UnavailableRequeue}, nil
	}
	if children.Remote != nil && controllerutil.AddFinalizer(nova, targetcluster.RemoteChildrenFinalizer) {
		if err := r.Client.Patch(ctx, nova, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
		// The patch returned the new metadata; the status patch compares
		// against it from here on.
		before = nova.DeepCopy()
	}

	outcome := flow.Continue
	for _, step := range []func(context.Context, *novav1alpha1.Nova, *targetcluster.Children) (flow.Outcome, error){
		r.reconcileComputeConfig,
		r.reconcileManageConfig,
	} {
		out, err := step(ctx, nova, children)
		outcome = flow.Merge(outcome, out)
		if err != nil || out.Halt {
			return flow.Result(outcome, err)
		}
	}
	if children.Remote != nil {
		outcome = flow.Merge(outcome, flow.Wait(placedResync))
	}
	return flow.Result(outcome, nil)
}

// reconcileDelete lets local children go with their ownerReferences, and
// sweeps a placed Nova's children before releasing its finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, nova *novav1alpha1.Nova) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(nova, targetcluster.RemoteChildrenFinalizer) {
		return ctrl.Result{}, nil
	}
	res, err := r.Teardown.Run(ctx, nova, childKinds)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !res.Release {
		setUnavailable(nova, res.Unavailable)
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
	}
	patch := client.MergeFrom(nova.DeepCopy())
	controllerutil.RemoveFinalizer(nova, targetcluster.RemoteChildrenFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, nova, patch))
}

// patchStatus stamps the generation, derives Ready, records the events of
// transitions and writes the status once per pass.
func (r *Reconciler) patchStatus(ctx context.Context, before, nova *novav1alpha1.Nova) error {
	nova.Status.ObservedGeneration = nova.Generation
	setReady(nova)
	for _, ev := range transitionEvents(before.Status.Conditions, nova.Status.Conditions) {
		r.Recorder.Eventf(nova, nil, ev.Type, ev.Reason, "Reconcile", "%s", ev.Message)
	}
	err := r.Client.Status().Patch(ctx, nova, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
