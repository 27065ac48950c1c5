package controlplane

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

func TestDecideOVN(t *testing.T) {
	central := func(mut func(*ovnv1alpha1.OVNCentral)) *ovnv1alpha1.OVNCentral {
		c := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-ovn", Generation: 2}}
		c.Status.Conditions = []metav1.Condition{{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionTrue, Reason: anvilmeta.AllReadyReason, ObservedGeneration: 2}}
		c.Status.Northbound.InternalDBAddress, c.Status.Southbound.InternalDBAddress = "ssl:10.0.0.1:6641", "ssl:10.0.0.2:6642"
		c.Status.ClientSecretName = "controlplane-ovn-client"
		if mut != nil {
			mut(c)
		}
		return c
	}
	placed := func(c *ovnv1alpha1.OVNCentral) {
		c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	}
	tests := []struct {
		name    string
		central *ovnv1alpha1.OVNCentral
		reason  string
		msgHas  string
	}{
		{"missing", nil, c5c3v1alpha1.OVNCentralNotFoundReason, "does not exist"},
		{"ready on the management cluster", central(nil), c5c3v1alpha1.OVNCentralReadyReason, "ssl:10.0.0.2:6642"},
		{"not ready relays the reason", central(func(c *ovnv1alpha1.OVNCentral) {
			c.Status.Conditions[0] = metav1.Condition{Type: anvilmeta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "StatefulSetProgressing", Message: "1 of 3", ObservedGeneration: 2}
		}), c5c3v1alpha1.WaitingForOVNCentralReason, "StatefulSetProgressing: 1 of 3"},
		{"ready for an older generation", central(func(c *ovnv1alpha1.OVNCentral) { c.Generation = 3 }), c5c3v1alpha1.WaitingForOVNCentralReason, "not Ready"},
		{"placed without external databases", central(placed), c5c3v1alpha1.OVNCentralNotExternallyReachableReason, "spec.southbound.externallyReachable"},
		{"placed, external, not published", central(func(c *ovnv1alpha1.OVNCentral) {
			placed(c)
			c.Spec.Northbound.ExternallyReachable, c.Spec.Southbound.ExternallyReachable = true, true
		}), c5c3v1alpha1.OVNEndpointsPendingReason, "status.northbound.dbAddress, status.southbound.dbAddress"},
		{"no client identity", central(func(c *ovnv1alpha1.OVNCentral) { c.Status.ClientSecretName = "" }), c5c3v1alpha1.OVNEndpointsPendingReason, "status.clientSecretName"},
	}
	for _, tt := range tests {
		v := DecideOVN(tt.central)
		if v.Reason != tt.reason || !strings.Contains(v.Message, tt.msgHas) {
			t.Errorf("%s: got %s %q, want %s containing %q", tt.name, v.Reason, v.Message, tt.reason, tt.msgHas)
		}
		if (v.Status == metav1.ConditionTrue) != (tt.reason == c5c3v1alpha1.OVNCentralReadyReason) {
			t.Errorf("%s: status %s", tt.name, v.Status)
		}
	}
}
