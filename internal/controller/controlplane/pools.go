package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// Withheld is a pool the ControlPlane sends no contract for, and why.
type Withheld struct {
	// Pool is the pool's name.
	Pool string
	// Why says which rule refuses it, without naming any value of it
	// beyond what its own condition already reports.
	Why string
}

// RunnablePools splits pools into those the pool controller would run and
// those it refuses before writing anything: a pool the policy forbids, or
// every pool of a namespace without the privileged-pools opt-in. Only the
// runnable ones earn their cluster the contract, so the service password
// and the bus URL never go to a cluster for a pool that cannot use them.
// A deleting pool is kept, since MirrorTargets drops it anyway and the
// rotation report must still see it go. It is pure, so the rules are
// table-tested.
func RunnablePools(pools []novav1alpha1.NovaCompute, policy workloadpolicy.Policy, namespaceOptedIn bool) ([]novav1alpha1.NovaCompute, []Withheld) {
	var runnable []novav1alpha1.NovaCompute
	var withheld []Withheld
	for i := range pools {
		p := &pools[i]
		if !p.DeletionTimestamp.IsZero() {
			runnable = append(runnable, *p)
			continue
		}
		if !namespaceOptedIn {
			withheld = append(withheld, Withheld{Pool: p.Name, Why: "its namespace has not opted in to privileged pools"})
			continue
		}
		if errs := policy.CheckNovaCompute(p); len(errs) > 0 {
			withheld = append(withheld, Withheld{Pool: p.Name, Why: "the pool policy refuses it"})
			continue
		}
		runnable = append(runnable, *p)
	}
	return runnable, withheld
}

// describeWithheld lists withheld pools for a condition message.
func describeWithheld(withheld []Withheld) string {
	parts := make([]string, 0, len(withheld))
	for _, w := range withheld {
		parts = append(parts, fmt.Sprintf("%s (%s)", w.Pool, w.Why))
	}
	return strings.Join(parts, ", ")
}

// namespaceOptedIn reads the ControlPlane's namespace past the cache, as
// the pool controller does, and tells whether it carries the opt-in. It is
// read only when there are pools to judge, so a ControlPlane without any
// costs no request.
func (r *Reconciler) namespaceOptedIn(ctx context.Context, namespace string) (bool, error) {
	refusal, err := workloadpolicy.ReadOptIn(ctx, r.APIReader, namespace)
	return refusal == nil && err == nil, err
}

// namespaceRead is namespaceOptedIn started at the beginning of a pass,
// beside the steps before the mirrors: on a rotation it is the one
// apiserver request between the new password and the mirror writes.
type namespaceRead struct {
	done    chan struct{}
	optedIn bool
	err     error
}

// readNamespaceAhead starts the read when the pass will judge pools: the
// ControlPlane runs a Nova, is not being deleted, and the cache holds a
// pool of that Nova. Otherwise it returns nil and reads nothing.
func (r *Reconciler) readNamespaceAhead(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) *namespaceRead {
	if cp.Spec.Services.Nova == nil || !cp.DeletionTimestamp.IsZero() {
		return nil
	}
	pools := &novav1alpha1.NovaComputeList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(cp.Namespace)); err != nil ||
		!slices.ContainsFunc(pools.Items, func(p novav1alpha1.NovaCompute) bool { return p.Spec.NovaRef.Name == NovaName(cp) }) {
		return nil
	}
	nr := &namespaceRead{done: make(chan struct{})}
	go func() {
		defer close(nr.done)
		nr.optedIn, nr.err = r.namespaceOptedIn(ctx, cp.Namespace)
	}()
	return nr
}

// optedIn returns the answer of the read started ahead, or reads now when
// none was started.
func (r *Reconciler) optedIn(ctx context.Context, ahead *namespaceRead, namespace string) (bool, error) {
	if ahead == nil {
		return r.namespaceOptedIn(ctx, namespace)
	}
	select {
	case <-ahead.done:
		return ahead.optedIn, ahead.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
