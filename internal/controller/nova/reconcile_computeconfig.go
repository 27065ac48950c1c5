package nova

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/novaconfig"
)

// inputWait polls for a missing input as a safety net; the Secret watch
// normally brings the next pass first.
const inputWait = time.Minute

// ComputeConfigName is the name of a Nova's in-cluster contract.
func ComputeConfigName(nova *novav1alpha1.Nova) string {
	return nova.Name + novav1alpha1.ComputeConfigSuffix
}

// RemoteComputeConfigName is the name of a Nova's remote contract.
func RemoteComputeConfigName(nova *novav1alpha1.Nova) string {
	return nova.Name + novav1alpha1.RemoteComputeConfigSuffix
}

// reconcileComputeConfig publishes the in-cluster contract and, while
// remoteCompute is set, the remote one. Both are rendered before either is
// written, so an input that cannot be rendered leaves every published
// Secret as it was. A remote contract no longer wanted is withdrawn first,
// so that withdrawing a credential never waits on an unrelated bad input.
func (r *Reconciler) reconcileComputeConfig(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova, children := p.nova, p.children
	if nova.Spec.RemoteCompute == nil {
		remote := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nova.Namespace, Name: RemoteComputeConfigName(nova)}}
		if _, err := children.Delete(ctx, nova, remote); err != nil {
			return flow.Continue, err
		}
		nova.Status.RemoteComputeConfigSecretRef = nil
	}
	in, err := inputs.NovaContract(ctx, children.Reader, nova)
	if err != nil {
		return flow.Continue, computeConfigError(err)
	}
	data, err := novaconfig.RenderDelivered(*in, nil)
	if err != nil {
		return flow.Continue, computeConfigError(err)
	}
	remoteData, remoteWait, err := renderRemoteContract(ctx, children.Reader, nova, *in)
	if err != nil {
		return flow.Continue, computeConfigError(err)
	}

	if err := children.Apply(ctx, nova, buildContractSecret(nova, ComputeConfigName(nova), data)); err != nil {
		return flow.Continue, computeConfigError(err)
	}
	nova.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: ComputeConfigName(nova)}
	// The control plane's nova.conf is rendered from the same inputs.
	p.contract = in

	published := []string{ComputeConfigName(nova)}
	switch {
	case remoteWait != nil:
		// The in-cluster contract and the later steps go on; the last
		// remote contract is kept until the hand-over arrives.
		conditionsOf(nova).Set(novav1alpha1.ComputeConfigReadyCondition, metav1.ConditionFalse,
			novav1alpha1.WaitingForRemoteTransportURLReason, remoteWait.Error())
		return flow.Requeue(inputWait), nil
	case remoteData != nil:
		if err := children.Apply(ctx, nova, buildContractSecret(nova, RemoteComputeConfigName(nova), remoteData)); err != nil {
			return flow.Continue, computeConfigError(err)
		}
		nova.Status.RemoteComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: RemoteComputeConfigName(nova)}
		published = append(published, RemoteComputeConfigName(nova))
	}
	conditionsOf(nova).Set(novav1alpha1.ComputeConfigReadyCondition, metav1.ConditionTrue, novav1alpha1.ComputeConfigPublishedReason,
		"published "+strings.Join(published, " and "))
	return flow.Continue, nil
}

// renderRemoteContract renders the remote contract while remoteCompute is
// set. A hand-over Secret that is not there yet is returned as remoteWait,
// not as an error.
func renderRemoteContract(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova, in novaconfig.ContractInput) (data map[string][]byte, remoteWait, err error) {
	remote, err := inputs.NovaRemote(ctx, reader, nova)
	switch {
	case inputs.IsMissing(err):
		return nil, err, nil
	case err != nil || remote == nil:
		return nil, nil, err
	}
	data, err = novaconfig.RenderDelivered(in, remote)
	return data, nil, err
}

// computeConfigError classifies a failure of the ComputeConfig step: a
// missing input is a wait, input that cannot be rendered or a Secret Anvil
// does not own is invalid, and anything else is retried. Every message is
// built from field names, Secret names, sections and schemes only.
func computeConfigError(err error) error {
	var (
		step     *flow.StepError
		missing  *inputs.MissingError
		notOwned *childwriter.NotOwnedError
	)
	switch {
	case errors.As(err, &step):
		return err
	case errors.As(err, &missing):
		return flow.Wait(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.WaitingForInputsReason, inputWait, "%s", err.Error())
	case errors.As(err, &notOwned), inputs.IsInvalid(err):
		return flow.Invalid(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigErrorReason, err)
	}
	return err
}

// buildContractSecret renders a contract Secret from its data.
func buildContractSecret(nova *novav1alpha1.Nova, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: nova.Namespace,
			Labels:    map[string]string{novav1alpha1.ComponentLabel: novav1alpha1.ComputeConfigComponent},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
