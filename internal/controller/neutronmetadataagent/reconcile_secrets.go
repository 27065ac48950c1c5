package neutronmetadataagent

import (
	"bytes"
	"context"
	"errors"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
)

// reconcileSecrets checks, on the agent's cluster and past any cache, that
// every Secret and key the agent references exists: the shared secret
// first, which must also be the one Nova checks when Anvil runs that Nova,
// then, with https, the CA bundle. A missing or refused one stops the pass
// before the configuration and the DaemonSet, so no pod ever references a
// Secret that is not there. It keeps only a hash of the shared secret;
// SecretsReady turns True once the configuration is rendered too.
func (r *Reconciler) reconcileSecrets(ctx context.Context, p *pass) (flow.Outcome, error) {
	a := p.agent
	nm := a.Spec.NovaMetadata
	p.secretHash = ""
	if ref := nm.SharedSecretRef; ref != nil {
		value, err := readKey(ctx, p, "spec.novaMetadata.sharedSecretRef", ref.Name, nm.ResolvedSharedSecretKey(), neutronv1alpha1.WaitingForNovaSharedSecretReason)
		if err != nil {
			return flow.Continue, err
		}
		if err := checkExpandable(a, ref.Name, nm.ResolvedSharedSecretKey(), value); err != nil {
			return flow.Continue, err
		}
		if err := r.checkNovaSharedSecret(ctx, p, ref.Name, value); err != nil {
			return flow.Continue, err
		}
		p.secretHash = SharedSecretHash(value)
	}
	if mountsCA(a) {
		if _, err := readKey(ctx, p, "spec.novaMetadata.caBundleSecretRef", nm.CABundleSecretRef.Name, nm.ResolvedCABundleKey(), neutronv1alpha1.WaitingForNovaMetadataCAReason); err != nil {
			return flow.Continue, err
		}
	}
	return flow.Continue, nil
}

// readKey returns the value of key in the Secret name of the agent's
// namespace on its cluster, read past any cache through inputs.ReadKey. A
// missing Secret or an empty or missing key is a wait reported under
// waitReason, with the Secret, the key and the cluster named, never a
// value.
func readKey(ctx context.Context, p *pass, field, name, key, waitReason string) ([]byte, error) {
	a := p.agent
	value, err := inputs.ReadKey(ctx, p.live, a.Namespace, field, name, key)
	var missing *inputs.MissingError
	switch {
	case errors.As(err, &missing) && missing.SecretMissing:
		return nil, flow.Wait(neutronv1alpha1.SecretsReadyCondition, waitReason, secretPoll,
			"waiting for Secret %s/%s with key %s on %s", a.Namespace, name, key, clusterPhrase(a.TargetClusterName()))
	case errors.As(err, &missing):
		return nil, flow.Wait(neutronv1alpha1.SecretsReadyCondition, waitReason, secretPoll,
			"waiting for key %s in Secret %s/%s on %s", key, a.Namespace, name, clusterPhrase(a.TargetClusterName()))
	case err != nil:
		return nil, err
	}
	return []byte(value), nil
}

// checkExpandable refuses a shared secret with a '$'. The pods receive it
// as SharedSecretEnv, whose value oslo.config expands like a file's, so a
// '$' would leave the agent signing with another string than Nova checks.
// No spelling in a Secret that Nova also reads verbatim can fix that, so it
// is a wait for a new value, named by Secret and key, never by value.
func checkExpandable(a *neutronv1alpha1.NeutronMetadataAgent, name, key string, value []byte) error {
	if !bytes.ContainsRune(value, '$') {
		return nil
	}
	return flow.Wait(neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.SharedSecretUnusableReason, secretPoll,
		"key %s of Secret %s/%s on %s holds a '$', which oslo.config expands in the agent's %s variable, so the agent would not sign with the value Nova checks; choose a shared secret without '$'; the DaemonSet is left as it was",
		key, a.Namespace, name, clusterPhrase(a.TargetClusterName()), SharedSecretEnv)
}
