package neutronmetadataagent

import (
	"context"
	"crypto/subtle"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
)

// ServingControlPlane returns the ControlPlane whose Neutron runs on the
// OVNCentral central in namespace and whose Nova Anvil runs: the one whose
// metadata API the agent's requests reach. It returns nil when none or
// more than one does, since then no single Nova says what the secret must
// be.
func ServingControlPlane(cps []c5c3v1alpha1.ControlPlane, namespace, central string) *c5c3v1alpha1.ControlPlane {
	var found *c5c3v1alpha1.ControlPlane
	for i := range cps {
		cp := &cps[i]
		n := cp.Spec.Services.Neutron
		if cp.DeletionTimestamp != nil || cp.Spec.Services.Nova == nil || n == nil || n.OVN == nil {
			continue
		}
		if n.OVN.CentralRef.Name != central || n.OVN.CentralRef.ResolvedNamespace(cp.Namespace) != namespace {
			continue
		}
		if found != nil {
			return nil
		}
		found = cp
	}
	return found
}

// checkNovaSharedSecret compares the agent's shared secret with the value
// in the compute contract of the Nova that serves the agent's central,
// which is what Nova checks signatures with. A difference is a wait under
// SharedSecretMismatch, before the configuration and the DaemonSet, so no
// pod rolls onto a secret Nova refuses. With no such Nova, or no contract
// yet, there is nothing to compare against and the agent goes on.
func (r *Reconciler) checkNovaSharedSecret(ctx context.Context, p *pass, secretName string, value []byte) error {
	a := p.agent
	var cps c5c3v1alpha1.ControlPlaneList
	if err := r.Client.List(ctx, &cps, client.InNamespace(a.Namespace)); err != nil {
		return fmt.Errorf("listing ControlPlanes: %w", err)
	}
	cp := ServingControlPlane(cps.Items, a.Namespace, p.centralName)
	if cp == nil {
		return nil
	}
	nova := cp.Name + c5c3v1alpha1.NovaSuffix
	contractName := nova + novav1alpha1.ComputeConfigSuffix
	contract := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: contractName}, contract); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading Secret %s/%s: %w", cp.Namespace, contractName, err)
	}
	want := contract.Data[novaconfig.KeyMetadataSecret]
	if len(want) == 0 || subtle.ConstantTimeCompare(want, value) == 1 {
		return nil
	}
	return flow.Wait(neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.SharedSecretMismatchReason, secretPoll,
		"the shared secret in Secret %s/%s on %s is not the one Nova %s/%s checks signatures with (key %s of %s), so Nova would refuse every request; the DaemonSet is left as it was",
		a.Namespace, secretName, clusterPhrase(a.TargetClusterName()), cp.Namespace, nova, novaconfig.KeyMetadataSecret, contractName)
}
