package neutronmetadataagent

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// reconcileConfig renders the agent's configuration into its immutable
// ConfigMap on the agent's cluster and deletes the rendered ConfigMaps
// beyond the newest three. A configuration that cannot be rendered is
// invalid input: it names the section, never a value, and nothing rolls
// until the spec is fixed.
func (r *Reconciler) reconcileConfig(ctx context.Context, p *pass) (flow.Outcome, error) {
	a := p.agent
	ini, err := RenderAgentINI(a, p.chassis.SBAddress)
	if err != nil {
		return flow.Continue, flow.Invalid(neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.ConfigErrorReason,
			fmt.Errorf("rendering %s: %w", ConfigKey, err))
	}
	cm := BuildConfigMap(a, ini)
	if err := p.children.Apply(ctx, a, cm); err != nil {
		var notOwned *childwriter.NotOwnedError
		if errors.As(err, &notOwned) {
			return flow.Continue, flow.Invalid(neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.ConfigErrorReason, err)
		}
		return flow.Continue, flow.Fail(neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.ConfigErrorReason, err)
	}
	if err := r.pruneConfigMaps(ctx, p, cm.Name); err != nil {
		return flow.Continue, flow.Fail(neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.ConfigErrorReason, err)
	}
	p.configMap, p.configHash = cm.Name, ConfigHash(ini)
	conditionsOf(a).Set(neutronv1alpha1.SecretsReadyCondition, metav1.ConditionTrue, neutronv1alpha1.SecretsAvailableReason,
		"every referenced Secret exists; the configuration is "+cm.Name)
	return flow.Continue, nil
}

// pruneConfigMaps deletes the agent's rendered ConfigMaps that
// ConfigMapsToPrune gives up. They are listed past any cache by their
// labels, and each is deleted only if the agent controls it, so a
// ConfigMap someone labelled alike is never touched.
func (r *Reconciler) pruneConfigMaps(ctx context.Context, p *pass, current string) error {
	a := p.agent
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := p.live.List(ctx, list, client.InNamespace(a.Namespace), client.MatchingLabels{
		nameLabel: nameValue, instanceLabel: a.Name, componentLabel: configComponent,
	}); err != nil {
		return fmt.Errorf("listing the rendered ConfigMaps: %w", err)
	}
	owned := make([]metav1.ObjectMeta, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		item.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		if childwriter.Controls(a, item, r.Scheme) {
			owned = append(owned, item.ObjectMeta)
		}
	}
	for _, name := range ConfigMapsToPrune(current, owned, keptConfigMaps) {
		old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: name}}
		if _, err := p.children.Delete(ctx, a, old); err != nil {
			return fmt.Errorf("deleting the old ConfigMap %s: %w", name, err)
		}
	}
	return nil
}
