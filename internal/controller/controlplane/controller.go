// Package controlplane reconciles ControlPlane objects. It projects the
// Nova child {cp}-nova, hands it the bus (and the external bus for remote
// computes), and mirrors that Nova's compute contract onto every compute
// cluster that hosts one of its pools.
package controlplane

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/targetcluster"
)

// waitRequeue is the poll interval of the ControlPlane's waits.
const waitRequeue = 15 * time.Second

// Reconciler reconciles ControlPlane objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry reaches the compute clusters that receive mirrors; nil
	// means no compute clusters, so no mirrors.
	Registry *targetcluster.Registry
	// Recorder records the events of condition transitions.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes/finalizers,verbs=update
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novas,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=nova.openstack.c5c3.io,resources=novacomputes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one ControlPlane up to date: get it, defer the status
// patch, then run the steps in order. Local children carry a controller
// ownerReference, so deletion needs no branch of its own.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	cp := &c5c3v1alpha1.ControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, cp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := cp.DeepCopy()
	defer func() {
		if err := r.patchStatus(ctx, before, cp); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	if !cp.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	outcome := flow.Continue
	for _, step := range []func(context.Context, *c5c3v1alpha1.ControlPlane) (flow.Outcome, error){
		r.reconcileNova,
	} {
		out, err := step(ctx, cp)
		outcome = flow.Merge(outcome, out)
		if err != nil || out.Halt {
			return flow.Result(outcome, err)
		}
	}
	return flow.Result(outcome, nil)
}

// patchStatus stamps the generation, derives Ready, records transition
// events and writes the status once.
func (r *Reconciler) patchStatus(ctx context.Context, before, cp *c5c3v1alpha1.ControlPlane) error {
	cp.Status.ObservedGeneration = cp.Generation
	setReady(cp)
	for _, ev := range transitionEvents(before.Status.Conditions, cp.Status.Conditions) {
		r.Recorder.Eventf(cp, nil, ev.Type, ev.Reason, "Reconcile", "%s", ev.Message)
	}
	err := r.Client.Status().Patch(ctx, cp, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
