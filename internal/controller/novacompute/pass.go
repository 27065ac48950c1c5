package novacompute

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/openstack"
)

// pass is the state one reconcile pass builds up, step by step.
type pass struct {
	r        *Reconciler
	pool     *novav1alpha1.NovaCompute
	deleting bool
	// started is when the pass began: a listing it shares must be newer.
	started time.Time

	// Set by NovaRef.
	nova *novav1alpha1.Nova
	// projected is set when a ControlPlane verifiably controls the Nova
	// (keystonepolicy.ControlPlaneOf), which delivers the contract copies.
	projected   bool
	cluster     *childwriter.Writer // the pool's cluster
	novaCluster *childwriter.Writer // the Nova's cluster
	image       string
	pullPolicy  corev1.PullPolicy
	creds       openstack.Credentials

	// Set by Nodes.
	decision  NodeDecision
	nodes     map[string]*corev1.Node // the Nodes the pool selects or holds
	rivals    []novav1alpha1.NovaCompute
	novaPools []novav1alpha1.NovaCompute // every pool of the Nova

	// Set by PoolConfig.
	contractSecret string
	contractHash   string
	poolConfigMap  string
	// preflightHash identifies the contract's endpoints (PreflightHash)
	// and endpoints names them for messages.
	preflightHash string
	endpoints     PreflightEndpoints

	// Set by Preflight: the check passed for preflightHash, so the
	// DaemonSet may be written.
	preflightPassed bool

	// Set by Aggregates: the aggregates Nova listed, by name, with those
	// the pass created.
	aggregates map[string]openstack.Aggregate

	// cloud is opened once per pass, on first use: one Keystone token.
	cloud    Cloud
	cloudErr error
}

// openCloud authenticates as the Nova's service user, once per pass.
func (p *pass) openCloud(ctx context.Context) (Cloud, error) {
	if p.cloud == nil && p.cloudErr == nil {
		p.cloud, p.cloudErr = p.r.Cloud(ctx, p.creds)
	}
	return p.cloud, p.cloudErr
}

// reader reads the pool's cluster directly, never from a cache, so node
// and ownership decisions never act on stale data.
func (p *pass) reader() client.Reader {
	if p.cluster.Remote() {
		return p.cluster.Reader
	}
	return p.r.APIReader
}

// entry returns the status entry of a node.
func (p *pass) entry(name string) *novav1alpha1.NovaComputeNode {
	for i := range p.pool.Status.Nodes {
		if p.pool.Status.Nodes[i].Name == name {
			return &p.pool.Status.Nodes[i]
		}
	}
	return nil
}

// dropEntry removes a node's entry.
func (p *pass) dropEntry(name string) {
	out := p.pool.Status.Nodes[:0]
	for _, n := range p.pool.Status.Nodes {
		if n.Name != name {
			out = append(out, n)
		}
	}
	p.pool.Status.Nodes = out
}

// disabledReason is the reason a pool disables a leaving node's service.
func disabledReason(pool *novav1alpha1.NovaCompute) string {
	return fmt.Sprintf("%s%s/%s", novav1alpha1.DisabledReasonPrefix, pool.Namespace, pool.Name)
}
