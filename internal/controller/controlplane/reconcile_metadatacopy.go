package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
)

// metadataSecretKey is the one key of the shared secret's copy.
const metadataSecretKey = "shared_secret"

// MetadataAgentSecretName is the copy of the metadata shared secret a
// ControlPlane writes for the metadata agents on compute clusters:
// {cp}-nova-metadata-agent-secret.
func MetadataAgentSecretName(cp *c5c3v1alpha1.ControlPlane) string {
	return neutronv1alpha1.MetadataSharedSecretMirrorName(cp.Name)
}

// MetadataAgentTargets returns the clusters that need the copy: those of
// the agents in the ControlPlane's namespace that are not being deleted,
// run on a compute cluster and name the copy, one per cluster, sorted. An
// agent on the management cluster reads the Nova's own Secret instead. It
// is pure, so the rules are table-tested.
func MetadataAgentTargets(cp *c5c3v1alpha1.ControlPlane, agents []neutronv1alpha1.NeutronMetadataAgent) []string {
	return agentClusterSet(cp, agents, false)
}

// DepartingAgentClusters returns the clusters where an agent that names
// the copy is being deleted, sorted. Its pods still sign with the copy,
// which stays there, unwritten, until the agent is gone. It is pure.
func DepartingAgentClusters(cp *c5c3v1alpha1.ControlPlane, agents []neutronv1alpha1.NeutronMetadataAgent) []string {
	return agentClusterSet(cp, agents, true)
}

// agentClusterSet is the sorted set of compute clusters of the agents
// that name the copy and are being deleted (deleting) or not.
func agentClusterSet(cp *c5c3v1alpha1.ControlPlane, agents []neutronv1alpha1.NeutronMetadataAgent, deleting bool) []string {
	name := MetadataAgentSecretName(cp)
	seen := map[string]bool{}
	for i := range agents {
		a := &agents[i]
		ref := a.Spec.NovaMetadata.SharedSecretRef
		if a.Namespace != cp.Namespace || a.DeletionTimestamp.IsZero() == deleting || a.TargetClusterName() == "" || ref == nil || ref.Name != name {
			continue
		}
		seen[a.TargetClusterName()] = true
	}
	targets := make([]string, 0, len(seen))
	for c := range seen {
		targets = append(targets, c)
	}
	sort.Strings(targets)
	return targets
}

// BuildMetadataAgentSecret is the copy for one cluster: the shared secret
// alone, so neither the bus URL nor the service password enters the
// agents' namespace. The ownership labels are added when it is claimed.
func BuildMetadataAgentSecret(cp *c5c3v1alpha1.ControlPlane, value []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: MetadataAgentSecretName(cp), Namespace: cp.Namespace,
			Labels: map[string]string{neutronv1alpha1.MetadataSharedSecretMirrorLabel: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{metadataSecretKey: append([]byte(nil), value...)},
	}
}

// reconcileMetadataAgentSecrets writes the shared secret's copy onto every
// cluster whose metadata agents name it, in place on every pass, so that a
// rotation reaches the agents, whose digest annotation then rolls them.
// Failures are noted for reportDeliveries, per cluster; the others are
// still served. A copy no agent names any more is withdrawn by
// withdrawDeliveries, and the teardown removes every copy left.
func (r *Reconciler) reconcileMetadataAgentSecrets(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp := p.cp
	if p.nova == nil {
		return flow.Continue, nil
	}
	agents := &neutronv1alpha1.NeutronMetadataAgentList{}
	if err := r.Client.List(ctx, agents, client.InNamespace(cp.Namespace)); err != nil {
		if apimeta.IsNoMatchError(err) {
			return flow.Continue, nil
		}
		return flow.Continue, flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaMetadataAgentSecretErrorReason,
			fmt.Errorf("listing the metadata agents: %w", err))
	}
	// Every copy an agent still names stays, also where an agent is
	// leaving or Neutron is no longer the ControlPlane's; only the copies
	// no agent names are withdrawn.
	targets := MetadataAgentTargets(cp, agents.Items)
	for _, cluster := range append(DepartingAgentClusters(cp, agents.Items), targets...) {
		p.wantCopy(cluster, MetadataAgentSecretName(cp))
	}
	if cp.Spec.Services.Neutron == nil || len(targets) == 0 {
		return flow.Continue, nil
	}
	value, err := r.metadataSharedSecret(ctx, p)
	if err != nil {
		return flow.Continue, err
	}
	if err := r.holdDeliveries(ctx, cp); err != nil {
		return flow.Continue, err
	}
	for _, cluster := range targets {
		copied, res := r.copyMetadataSecretTo(ctx, cp, cluster, value)
		if res != nil {
			p.failures = append(p.failures, *res)
			continue
		}
		cp.Status.Deliveries = RecordDelivery(cp.Status.Deliveries, cluster, copied)
	}
	return flow.Continue, nil
}

// metadataSharedSecret reads the value the compute contract carries, so the
// agents sign with exactly what Nova checks.
func (r *Reconciler) metadataSharedSecret(ctx context.Context, p *pass) ([]byte, error) {
	contract := &corev1.Secret{}
	name := NovaName(p.cp) + novav1alpha1.ComputeConfigSuffix
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.nova.Namespace, Name: name}, contract)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaMetadataAgentSecretErrorReason,
			fmt.Errorf("reading %s: %w", name, err))
	case err != nil || len(contract.Data[novaconfig.KeyMetadataSecret]) == 0:
		return nil, flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForComputeConfigReason, waitRequeue,
			"waiting for %s/%s to carry %s", p.nova.Namespace, name, novaconfig.KeyMetadataSecret)
	}
	return contract.Data[novaconfig.KeyMetadataSecret], nil
}

// copyMetadataSecretTo writes the copy onto one cluster and returns what
// it wrote, or a problem. A same-named Secret the ControlPlane does not
// own is refused and left as it is.
func (r *Reconciler) copyMetadataSecretTo(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string, value []byte) (*corev1.Secret, *clusterResult) {
	children, err := r.Registry.WriterFor(cluster, nil)
	if err != nil {
		return nil, &clusterResult{cluster, anvilmeta.TargetClusterUnavailableReason, err.Error()}
	}
	copied := BuildMetadataAgentSecret(cp, value)
	err = children.Apply(ctx, cp, copied)
	var notOwned *childwriter.NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		return nil, &clusterResult{cluster, c5c3v1alpha1.NovaMetadataAgentSecretErrorReason, fmt.Sprintf("on %s: %s", cluster, err.Error())}
	case err != nil:
		return nil, &clusterResult{cluster, c5c3v1alpha1.NovaMetadataAgentSecretErrorReason,
			fmt.Sprintf("on %s: writing Secret %s/%s: %s", cluster, copied.Namespace, copied.Name, err.Error())}
	}
	return copied, nil
}
