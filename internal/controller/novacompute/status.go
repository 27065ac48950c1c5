package novacompute

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
)

// conditionsOf is where a pass over pool sets its conditions, stamped with
// its generation.
func conditionsOf(pool *novav1alpha1.NovaCompute) flow.Conditions {
	return flow.Conditions{List: &pool.Status.Conditions, Generation: pool.Generation}
}

// findCondition returns a condition of the pool, or nil.
func findCondition(pool *novav1alpha1.NovaCompute, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(pool.Status.Conditions, typ)
}
