package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// shortHash is how much of a contract hash a message quotes; status
// carries the whole hash.
const shortHash = 12

// Rotation is what DecideRotation concludes for ComputeRotationComplete.
type Rotation struct {
	Clusters []c5c3v1alpha1.ComputeClusterStatus
	Status   metav1.ConditionStatus
	Reason   string
	Message  string
}

// reconcileRotation reports, per compute cluster, the contract its mirror
// carries and what each pool there has rolled out, and whether every
// cluster runs its current contract.
func (r *Reconciler) reconcileRotation(_ context.Context, p *pass) (flow.Outcome, error) {
	rot := DecideRotation(p.targets, p.mirrorHashes, p.pools, NovaName(p.cp))
	p.cp.Status.ComputeClusters = rot.Clusters
	conditionsOf(p.cp).Set(c5c3v1alpha1.ComputeRotationCompleteCondition, rot.Status, rot.Reason, rot.Message)
	return flow.Continue, nil
}

// DecideRotation builds the per-cluster report from the targets, the hash
// of the mirror written to each (a cluster missing from hashes was not
// written), and the Nova's pools. A cluster runs its contract once every
// pool of the Nova there reports that hash as rolled out. It is pure, so
// the rules are table-tested.
func DecideRotation(targets []string, hashes map[string]string, pools []novav1alpha1.NovaCompute, nova string) Rotation {
	if len(targets) == 0 {
		return Rotation{Status: metav1.ConditionTrue, Reason: c5c3v1alpha1.NoComputeClustersReason,
			Message: "no pool of the Nova runs on a compute cluster"}
	}
	var clusters []c5c3v1alpha1.ComputeClusterStatus
	var behind []string
	for _, name := range targets {
		cs := c5c3v1alpha1.ComputeClusterStatus{Name: name, ContractHash: hashes[name]}
		var lagging []string
		for i := range pools {
			pool := &pools[i]
			if pool.Spec.NovaRef.Name != nova || pool.TargetClusterName() != name || !pool.DeletionTimestamp.IsZero() {
				continue
			}
			cs.Pools = append(cs.Pools, c5c3v1alpha1.PoolRolloutStatus{Name: pool.Name, RolledOutContractHash: pool.Status.RolledOutContractHash})
			if cs.ContractHash != "" && pool.Status.RolledOutContractHash != cs.ContractHash {
				lagging = append(lagging, pool.Name)
			}
		}
		slices.SortFunc(cs.Pools, func(a, b c5c3v1alpha1.PoolRolloutStatus) int { return strings.Compare(a.Name, b.Name) })
		switch {
		case cs.ContractHash == "":
			behind = append(behind, name+" (its mirror is not written)")
		case len(lagging) > 0:
			slices.Sort(lagging)
			behind = append(behind, fmt.Sprintf("%s (pools rolling out: %s)", name, strings.Join(lagging, ", ")))
		}
		clusters = append(clusters, cs)
	}
	on := commonHash(clusters)
	if len(behind) == 0 {
		return Rotation{Clusters: clusters, Status: metav1.ConditionTrue, Reason: c5c3v1alpha1.RotationCompleteReason,
			Message: fmt.Sprintf("%d of %d clusters on %s", len(targets), len(targets), on)}
	}
	return Rotation{Clusters: clusters, Status: metav1.ConditionFalse, Reason: c5c3v1alpha1.RotationInProgressReason,
		Message: fmt.Sprintf("%d of %d clusters on %s; behind: %s", len(targets)-len(behind), len(targets), on, strings.Join(behind, "; "))}
}

// commonHash names what the clusters should run: the one hash, shortened,
// when every written mirror carries the same contract, and "their current
// contract" when each cluster has its own.
func commonHash(clusters []c5c3v1alpha1.ComputeClusterStatus) string {
	hash := ""
	for _, c := range clusters {
		switch {
		case c.ContractHash == "":
		case hash == "":
			hash = c.ContractHash
		case hash != c.ContractHash:
			return "their current contract"
		}
	}
	if hash == "" {
		return "their current contract"
	}
	return hash[:min(len(hash), shortHash)]
}
