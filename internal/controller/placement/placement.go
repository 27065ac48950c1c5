// Package placement is the protocol of every kind whose children may live
// on a compute cluster: resolve the cluster its targetClusterRef names,
// hold the object with the remote-children finalizer before anything is
// written there, and, when the object is deleted, sweep its children there
// and release the finalizer. A controller names only what differs: the
// condition that reports an unusable cluster, how often it looks again, and
// the kinds of its children. The Reconcile stays the controller's own; the
// protocol is what it calls.
package placement

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/targetcluster"
)

// Protocol is one controller's placement: the parts shared by every kind
// and the few values that differ.
type Protocol struct {
	// Client patches the finalizer; it also writes local children.
	Client client.Client
	// Scheme maps children and owners to their kinds.
	Scheme *runtime.Scheme
	// APIReader reads local children past the cache.
	APIReader client.Reader
	// Registry resolves compute clusters; nil runs without them.
	Registry *targetcluster.Registry
	// Teardown sweeps the children of a deleted object.
	Teardown *Teardown
	// Condition reports a cluster that cannot be used, under
	// TargetClusterUnavailable.
	Condition string
	// Poll is how soon a pass looks again at a cluster that cannot be
	// used; the registry also wakes the object when it can.
	Poll time.Duration
	// Kinds are the kinds of the children the teardown sweeps.
	Kinds []schema.GroupVersionKind
}

// Placement is where one pass writes and reads its children.
type Placement struct {
	// Children writes the children, locally or on the compute cluster.
	Children *childwriter.Writer
	// Live reads children past any cache: the management cluster's
	// apiserver for local children, the compute cluster's for placed ones.
	Live client.Reader
}

// Remote tells whether the children live on a compute cluster.
func (p Placement) Remote() bool { return p.Children.Remote() }

// Resolve finds where obj's children live and, for a placed object, adds
// the remote-children finalizer before anything is written there. A cluster
// that cannot be used is a wait on the protocol's condition: nothing of the
// pass runs until it can.
func Resolve(ctx context.Context, p Protocol, obj targetcluster.Targeted) (Placement, error) {
	children, err := p.Registry.WriterFor(obj.TargetClusterName(), childwriter.Local(p.Client, p.Scheme))
	switch DecideResolve(err == nil, err == nil && children.Remote(),
		controllerutil.ContainsFinalizer(obj, RemoteChildrenFinalizer), !obj.GetDeletionTimestamp().IsZero()) {
	case Wait:
		return Placement{}, flow.Wait(p.Condition, anvilmeta.TargetClusterUnavailableReason, p.Poll, "%s", err.Error())
	case Proceed:
		if !children.Remote() {
			return Placement{Children: children, Live: p.APIReader}, nil
		}
	case AddFinalizer:
		if err := flow.AddFinalizer(ctx, p.Client, obj, RemoteChildrenFinalizer); err != nil {
			return Placement{}, err
		}
	}
	return Placement{Children: children, Live: children.Reader}, nil
}

// Release tears down a deleted object: with the remote-children finalizer,
// its children on the compute cluster are swept and the finalizer goes.
// While the cluster cannot be used, the object waits, its condition says
// why, and it is looked at again; the teardown gives the cluster up after
// its abandon window. A local object holds no finalizer: its children go
// with their ownerReferences.
func (p Protocol) Release(ctx context.Context, obj targetcluster.Targeted, conditions flow.Conditions) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, RemoteChildrenFinalizer) {
		return ctrl.Result{}, nil
	}
	res, err := p.Teardown.Run(ctx, obj, p.Kinds)
	if err != nil {
		return ctrl.Result{}, err
	}
	if DecideRelease(res) == Wait {
		conditions.Set(p.Condition, metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, res.Unavailable.Error())
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
	}
	return ctrl.Result{}, flow.RemoveFinalizer(ctx, p.Client, obj, RemoteChildrenFinalizer)
}

// Action is what the protocol does next with an object.
type Action int

const (
	// Proceed runs the pass with the children where they are.
	Proceed Action = iota
	// Wait stops the pass until the cluster can be used.
	Wait
	// AddFinalizer holds a placed object before its first remote write.
	AddFinalizer
	// RemoveFinalizer lets a deleted object go once its children are swept
	// or its cluster was given up.
	RemoveFinalizer
)

// DecideResolve is the protocol's rule for a pass: an unusable cluster
// waits; a placed object without the finalizer gets it before anything
// is written there, unless it is being deleted, when the apiserver takes
// no new finalizer and the pass (a pool draining its nodes) goes on
// without; anything else proceeds. It is pure.
func DecideResolve(resolved, remote, hasFinalizer, deleting bool) Action {
	switch {
	case !resolved:
		return Wait
	case remote && !hasFinalizer && !deleting:
		return AddFinalizer
	}
	return Proceed
}

// DecideRelease is the protocol's rule for a deleted object whose
// teardown ran: the finalizer goes when the teardown released it, else the
// object waits for its cluster. It is pure.
func DecideRelease(res TeardownResult) Action {
	if res.Release {
		return RemoveFinalizer
	}
	return Wait
}
