package novacompute

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/extraconfig"
	"github.com/anvil/anvil/internal/novaconfig"
)

// poolConfigComponent is the component label of the pool's ConfigMaps.
const poolConfigComponent = "pool-config"

// reconcilePoolConfig reads the contract on the pool's cluster, hashes it,
// and writes the pool's own configuration as an immutable ConfigMap named
// after its content, keeping the three before it for pods still on them.
func (r *Reconciler) reconcilePoolConfig(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	name := pool.Spec.NovaRef.Name + novav1alpha1.ComputeConfigSuffix
	contract := &corev1.Secret{}
	err := p.cluster.Reader.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: name}, contract)
	switch {
	case apierrors.IsNotFound(err):
		return flow.Continue, flow.Wait(novav1alpha1.ConfigReadyCondition, novav1alpha1.WaitingForComputeConfigReason, inputRequeue,
			"the compute contract %s/%s is not on the pool's cluster yet", pool.Namespace, name)
	case err != nil:
		return flow.Continue, flow.Fail(novav1alpha1.ConfigReadyCondition, novav1alpha1.ConfigErrorReason,
			fmt.Errorf("reading the compute contract %s: %w", name, err))
	}
	if !ContractVouchedFor(p.nova, p.projected, pool, contract) {
		return flow.Continue, flow.Wait(novav1alpha1.ConfigReadyCondition, novav1alpha1.ComputeConfigNotDeliveredReason, inputRequeue,
			"the Secret %s/%s on the pool's cluster is not the copy the Nova's ControlPlane delivers (it lacks the mirror or ownership labels); "+
				"the pool mounts nothing until it is deleted and the ControlPlane writes its own", pool.Namespace, name)
	}
	if missing := MissingContractKeys(contract.Data); len(missing) > 0 {
		return flow.Continue, flow.Wait(novav1alpha1.ConfigReadyCondition, novav1alpha1.ComputeConfigIncompleteReason, inputRequeue,
			"the compute contract %s lacks %s", name, strings.Join(missing, ", "))
	}
	p.contractSecret, p.contractHash = name, ContractHash(contract.Data)
	p.preflightHash = PreflightHash(contract.Data)
	p.endpoints = PreflightEndpoints{Bus: BusHosts(string(contract.Data["transport_url"])), Keystone: KeystoneURL(contract.Data["nova-compute.conf"])}

	r.reportExtraConfig(pool)
	rendered, err := BuildPoolConfig(pool)
	if err != nil {
		// Only the unsafe-value errors are known to name no more than a
		// section and a key; any other is not repeated on the condition.
		reported := errors.New("rendering the pool's configuration failed")
		var owned *OwnedKeyError
		if novaconfig.IsUnsafeValue(err) || errors.As(err, &owned) {
			reported = fmt.Errorf("extraConfig: %w", err)
		}
		return flow.Continue, flow.Invalid(novav1alpha1.ConfigReadyCondition, novav1alpha1.ConfigErrorReason, reported)
	}
	p.poolConfigMap = PoolConfigName(pool.Name, rendered)
	labels := PodLabels(pool.Name)
	labels[componentLabel] = poolConfigComponent
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: p.poolConfigMap, Namespace: pool.Namespace, Labels: labels},
		// The name carries the content's hash, so the object never changes
		// and may be immutable.
		Immutable: ptr.To(true),
		Data:      map[string]string{novav1alpha1.PoolConfigKey: string(rendered)},
	}
	if err := p.cluster.Apply(ctx, pool, cm); err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.ConfigReadyCondition, novav1alpha1.ConfigErrorReason,
			fmt.Errorf("writing ConfigMap %s: %w", p.poolConfigMap, err))
	}
	if err := r.prunePoolConfigs(ctx, p, labels); err != nil {
		return flow.Continue, flow.Fail(novav1alpha1.ConfigReadyCondition, novav1alpha1.ConfigErrorReason, err)
	}
	conditionsOf(pool).Set(novav1alpha1.ConfigReadyCondition, metav1.ConditionTrue, novav1alpha1.ConfigRenderedReason,
		"ConfigMap "+p.poolConfigMap)
	return flow.Continue, nil
}

// prunePoolConfigs deletes the pool's ConfigMaps beyond the current one
// and the keptPoolConfigs newest before it.
func (r *Reconciler) prunePoolConfigs(ctx context.Context, p *pass, labels map[string]string) error {
	list := &corev1.ConfigMapList{}
	if err := p.reader().List(ctx, list, client.InNamespace(p.pool.Namespace), client.MatchingLabels(labels)); err != nil {
		return fmt.Errorf("listing the pool's ConfigMaps: %w", err)
	}
	var older []corev1.ConfigMap
	for _, cm := range list.Items {
		if cm.Name != p.poolConfigMap && childwriter.Controls(p.pool, &cm, r.Scheme) {
			older = append(older, cm)
		}
	}
	sort.Slice(older, func(i, j int) bool {
		a, b := older[i].CreationTimestamp, older[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return older[i].Name > older[j].Name
	})
	for i := keptPoolConfigs; i < len(older); i++ {
		if _, err := p.cluster.Delete(ctx, p.pool, &older[i]); err != nil {
			return fmt.Errorf("deleting ConfigMap %s: %w", older[i].Name, err)
		}
	}
	return nil
}

// reportExtraConfig sets ExtraConfigHealthy, with a Warning when the set of
// overridden keys changes.
func (r *Reconciler) reportExtraConfig(pool *novav1alpha1.NovaCompute) {
	keys := extraconfig.OverriddenPoolKeys(pool.Spec.ExtraConfig)
	if len(keys) == 0 {
		conditionsOf(pool).Set(novav1alpha1.ExtraConfigHealthyCondition, metav1.ConditionTrue, novav1alpha1.NoOwnedKeysOverriddenReason,
			"extraConfig overrides no option the pool renders")
		return
	}
	msg := "extraConfig overrides " + strings.Join(keys, ", ") + ", which spec.libvirt renders"
	if prev := findCondition(pool, novav1alpha1.ExtraConfigHealthyCondition); prev == nil || prev.Message != msg {
		r.event(pool, nil, true, novav1alpha1.ExtraConfigOwnedKeyOverrideEvent, "Render", "%s", msg)
	}
	conditionsOf(pool).Set(novav1alpha1.ExtraConfigHealthyCondition, metav1.ConditionFalse, novav1alpha1.OwnedKeysOverriddenReason, msg)
}
