package novacompute

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// StepConditions are the conditions Ready rolls up, in pipeline order.
// ExtraConfigHealthy is reported but never holds a pool back.
var StepConditions = []string{
	novav1alpha1.NovaReadyCondition,
	novav1alpha1.NodesReadyCondition,
	novav1alpha1.ConfigReadyCondition,
	novav1alpha1.DaemonSetReadyCondition,
	novav1alpha1.AggregatesReadyCondition,
	novav1alpha1.ServicesReadyCondition,
	novav1alpha1.TraitsReadyCondition,
}

// ReadyCondition derives Ready: True AllReady when every step condition is
// True, else False NotAllReady, naming the first that is not and its
// reason. It is pure.
func ReadyCondition(conds []metav1.Condition, generation int64) metav1.Condition {
	for _, t := range StepConditions {
		c := apimeta.FindStatusCondition(conds, t)
		if c == nil {
			return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionFalse, Reason: novav1alpha1.NotAllReadyReason,
				Message: t + " has not been reported yet", ObservedGeneration: generation}
		}
		if c.Status != metav1.ConditionTrue {
			return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionFalse, Reason: novav1alpha1.NotAllReadyReason,
				Message: t + " is " + string(c.Status) + " (" + c.Reason + "): " + c.Message, ObservedGeneration: generation}
		}
	}
	return metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, Reason: novav1alpha1.AllReadyReason,
		Message: "every node of the pool is a Nova host", ObservedGeneration: generation}
}

func setReady(pool *novav1alpha1.NovaCompute) {
	apimeta.SetStatusCondition(&pool.Status.Conditions, ReadyCondition(pool.Status.Conditions, pool.Generation))
}

// setCondition sets a condition stamped with the pool's generation.
func setCondition(pool *novav1alpha1.NovaCompute, typ string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&pool.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: pool.Generation,
	})
}

// findCondition returns a condition of the pool, or nil.
func findCondition(pool *novav1alpha1.NovaCompute, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(pool.Status.Conditions, typ)
}
