package perf

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/novacompute"
)

// Milestones are when, counted from the first object applied, the stages
// a pool goes through were first complete for every pool, so that P4's
// total can be told apart: what kwok and the Kubernetes controllers took
// and what the operator took.
type Milestones struct {
	// NovaInstalled is when the Nova reported its installed release, which
	// its database Jobs on the management cluster's kwok node gate.
	NovaInstalled time.Duration
	// Rolled is when every pool's DaemonSet ran a ready pod on each of its
	// nodes: the scheduler, the DaemonSet controller and kwok at work.
	Rolled time.Duration
}

// observe notes the milestones reached at elapsed; reached ones stay.
func (s *Stack) observe(ctx context.Context, m *Milestones, sc Scale, nova string, elapsed time.Duration) {
	if m.NovaInstalled == 0 {
		n := &novav1alpha1.Nova{}
		if err := s.Env.Management.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: nova}, n); err == nil && n.Status.InstalledRelease != "" {
			m.NovaInstalled = elapsed
		}
	}
	if m.Rolled != 0 {
		return
	}
	for _, c := range s.Env.Compute {
		for i := range sc.PoolsPerCluster {
			ds := &appsv1.DaemonSet{}
			key := client.ObjectKey{Namespace: Namespace, Name: novacompute.DaemonSetName(scalePoolName(c.Name, i))}
			if err := c.Client.Get(ctx, key, ds); err != nil || !rolledOut(ds, int32(sc.NodesPerCluster/sc.PoolsPerCluster)) {
				return
			}
		}
	}
	m.Rolled = elapsed
}

// rolledOut tells whether a DaemonSet runs a ready, current pod on each of
// at least nodes nodes.
func rolledOut(ds *appsv1.DaemonSet, nodes int32) bool {
	st := ds.Status
	return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled >= nodes &&
		st.NumberReady == st.DesiredNumberScheduled && st.UpdatedNumberScheduled == st.DesiredNumberScheduled
}

// novaOf is the name of a ControlPlane's Nova.
func novaOf(cp string) string { return cp + c5c3v1alpha1.NovaSuffix }
