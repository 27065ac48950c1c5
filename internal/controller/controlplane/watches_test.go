package controlplane

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// settledNova is a Nova Ready for generation 2 with a current contract.
func settledNova() *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: "cp-nova", Namespace: "openstack", Generation: 2}}
	n.Status.ObservedGeneration = 2
	n.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: "cp-nova-compute-config"}
	n.Status.Conditions = []metav1.Condition{
		{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: "Ready"},
		{Type: novav1alpha1.ComputeConfigReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: novav1alpha1.ComputeConfigPublishedReason},
	}
	return n
}

// setFalse turns one condition of a Nova False in place, under reason.
func setFalse(n *novav1alpha1.Nova, typ, reason string) {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = metav1.ConditionFalse, reason
		}
	}
}

func TestNovaGateChanged(t *testing.T) {
	cases := []struct {
		name   string
		change func(*novav1alpha1.Nova)
		want   bool
	}{
		{"nothing", func(*novav1alpha1.Nova) {}, false},
		{"a rollout's progress in a condition's message", func(n *novav1alpha1.Nova) {
			n.Status.Conditions[0].Message = "2 of 3 replicas updated"
		}, false},
		{"another condition turns False", func(n *novav1alpha1.Nova) {
			n.Status.Conditions = append(n.Status.Conditions, metav1.Condition{Type: "DeploymentsReady", Status: metav1.ConditionFalse})
		}, false},
		{"a new generation", func(n *novav1alpha1.Nova) { n.Generation = 3 }, true},
		{"Ready turns False", func(n *novav1alpha1.Nova) {
			setFalse(n, anvilmeta.ReadyCondition, "Rolling")
		}, true},
		// The pass renders the contract itself, so the Nova's own verdict
		// on it starts no pass.
		{"the contract fails", func(n *novav1alpha1.Nova) {
			setFalse(n, novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigErrorReason)
		}, false},
		{"the contract reference goes while Ready", func(n *novav1alpha1.Nova) { n.Status.ComputeConfigSecretRef = nil }, false},
		{"the contract reference goes while rolling", func(n *novav1alpha1.Nova) {
			n.Status.ComputeConfigSecretRef = nil
			setFalse(n, anvilmeta.ReadyCondition, "Rolling")
		}, true},
		{"deletion starts", func(n *novav1alpha1.Nova) { now := metav1.Now(); n.DeletionTimestamp = &now }, true},
		{"a label changes", func(n *novav1alpha1.Nova) { n.Labels = map[string]string{"team": "a"} }, true},
		{"an annotation changes", func(n *novav1alpha1.Nova) { n.Annotations = map[string]string{"note": "a"} }, true},
		{"an owner is added", func(n *novav1alpha1.Nova) {
			n.OwnerReferences = []metav1.OwnerReference{{UID: "u1", Name: "cp", Kind: "ControlPlane"}}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := settledNova(), settledNova()
			tc.change(updated)
			if got := NovaGateChanged(old, updated); got != tc.want {
				t.Errorf("NovaGateChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecideNovaGate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*novav1alpha1.Nova)
		want   NovaGate
	}{
		{"Ready for its generation", func(*novav1alpha1.Nova) {}, NovaSettled},
		{"a new generation, not yet observed", func(n *novav1alpha1.Nova) { n.Generation = 3 }, NovaRolling},
		{"a new generation whose contract the Nova has not published yet", func(n *novav1alpha1.Nova) {
			n.Generation = 3
			setFalse(n, novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.WaitingForInputsReason)
		}, NovaRolling},
		{"observed but rolling its Deployments", func(n *novav1alpha1.Nova) {
			setFalse(n, anvilmeta.ReadyCondition, "Rolling")
		}, NovaRolling},
		{"never published a contract", func(n *novav1alpha1.Nova) {
			n.Status = novav1alpha1.NovaStatus{}
		}, NovaInstalling},
		{"installing: observed, no contract yet", func(n *novav1alpha1.Nova) {
			n.Status.ComputeConfigSecretRef = nil
			setFalse(n, anvilmeta.ReadyCondition, "Installing")
		}, NovaInstalling},
		{"Ready for an older generation only", func(n *novav1alpha1.Nova) {
			n.Status.ObservedGeneration = 1
		}, NovaRolling},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := settledNova()
			tc.change(n)
			if got := DecideNovaGate(n); got != tc.want {
				t.Errorf("DecideNovaGate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthOptInChanged(t *testing.T) {
	label := c5c3v1alpha1.HypervisorOperatorCredentialsLabel
	ns := func(labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "openstack", Labels: labels}}
	}
	cases := []struct {
		name         string
		old, updated map[string]string
		want         bool
	}{
		{"no labels either side", nil, nil, false},
		{"another label changes", map[string]string{"a": "1"}, map[string]string{"a": "2"}, false},
		{"the label is added", nil, map[string]string{label: "true"}, true},
		{"the label is removed", map[string]string{label: "true"}, nil, true},
		{"true becomes false", map[string]string{label: "true"}, map[string]string{label: "false"}, true},
		{"the label stays, another changes", map[string]string{label: "true", "a": "1"}, map[string]string{label: "true"}, false},
		{"a value that is not true is set", nil, map[string]string{label: "yes"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := AuthOptInChanged(ns(tc.old), ns(tc.updated)); got != tc.want {
				t.Errorf("AuthOptInChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
