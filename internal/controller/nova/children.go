package nova

import (
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/targetcluster"
)

// resolveChildren returns the cluster that holds the Nova's children, or
// the registry's error when that cluster is unavailable.
func (r *Reconciler) resolveChildren(nova *novav1alpha1.Nova) (*targetcluster.Children, error) {
	name := nova.TargetClusterName()
	if name == "" {
		return targetcluster.LocalChildren(r.Client), nil
	}
	if r.Registry == nil {
		return nil, &targetcluster.UnavailableError{Cluster: name, Reason: "this operator runs without compute clusters"}
	}
	remote, err := r.Registry.Resolve(name)
	if err != nil {
		return nil, err
	}
	return targetcluster.ChildrenOn(remote), nil
}
