package nova

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
)

// ServiceConfigName is the name of the control plane's nova.conf Secret.
func ServiceConfigName(nova *novav1alpha1.Nova) string {
	return nova.Name + novav1alpha1.ServiceConfigSuffix
}

// reconcileServiceConfig publishes {nova}-config, the nova.conf every
// Deployment and database Job of the control plane mounts. It is rendered
// from the inputs the two steps before it read, so the contract and the
// control plane never see different credentials in one pass. The last
// published Secret is kept on any failure: running pods keep working
// configuration, and nothing rolls until the input is fixed.
func (r *Reconciler) reconcileServiceConfig(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova := p.nova
	if p.contract == nil || p.manage == nil {
		return flow.Continue, flow.Invalid(novav1alpha1.ServiceConfigReadyCondition, novav1alpha1.ServiceConfigErrorReason,
			errors.New("spec.apiDatabase and spec.database are both required: the control plane's services and database Jobs connect to them"))
	}
	data, err := novaconfig.RenderControlPlane(novaconfig.ControlPlaneInput{
		ContractInput: *p.contract, APIDatabase: p.manage.APIDatabase, Database: p.manage.Database,
	})
	if err != nil {
		// The renderer names a field or a section, never a value.
		return flow.Continue, flow.Invalid(novav1alpha1.ServiceConfigReadyCondition, novav1alpha1.ServiceConfigErrorReason, fmt.Errorf("spec: %w", err))
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServiceConfigName(nova),
			Namespace: nova.Namespace,
			Labels:    map[string]string{novav1alpha1.ComponentLabel: novav1alpha1.ServiceConfigComponent},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := p.children.Apply(ctx, nova, secret); err != nil {
		var notOwned *childwriter.NotOwnedError
		if errors.As(err, &notOwned) {
			return flow.Continue, flow.Invalid(novav1alpha1.ServiceConfigReadyCondition, novav1alpha1.ServiceConfigErrorReason, err)
		}
		return flow.Continue, err
	}
	p.configHash = novaconfig.Hash(data)
	conditionsOf(nova).Set(novav1alpha1.ServiceConfigReadyCondition, metav1.ConditionTrue, novav1alpha1.ServiceConfigPublishedReason,
		"published "+ServiceConfigName(nova))
	return flow.Continue, nil
}
