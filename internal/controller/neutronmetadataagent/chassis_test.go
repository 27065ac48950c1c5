package neutronmetadataagent

import (
	"strings"
	"testing"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

type mutate func(*ovnv1alpha1.OVNChassis, *ovnv1alpha1.OVNCentral)

// chassisCase is one arm of DecideChassis and what it must answer.
type chassisCase struct {
	name          string
	agentCluster  string
	chassis       *ovnv1alpha1.OVNChassis
	central       *ovnv1alpha1.OVNCentral
	mutate        mutate
	reason        string
	polled        bool
	sb            string
	msgHas, msgNo []string
}

func TestDecideChassis(t *testing.T) {
	tests := []chassisCase{
		{name: "1: no chassis", chassis: nil, central: testCentral(false),
			reason: neutronv1alpha1.ChassisNotFoundReason, polled: true, msgHas: []string{"controlplane-compute-chassis", "openstack"}},
		{name: "2: chassis placed, agent local", chassis: testChassis("compute-a"), central: testCentral(true),
			reason: neutronv1alpha1.ChassisOnAnotherClusterReason, msgHas: []string{"the management cluster", "target cluster compute-a"}},
		{name: "2: agent placed, chassis local", agentCluster: "compute-a", chassis: testChassis(""), central: testCentral(false),
			reason: neutronv1alpha1.ChassisOnAnotherClusterReason},
		{name: "2: two compute clusters", agentCluster: "compute-b", chassis: testChassis("compute-a"), central: testCentral(true),
			reason: neutronv1alpha1.ChassisOnAnotherClusterReason, msgHas: []string{"target cluster compute-b", "target cluster compute-a"}},
		{name: "2 before 3: another cluster wins over a missing central", agentCluster: "compute-b", chassis: testChassis("compute-a"),
			reason: neutronv1alpha1.ChassisOnAnotherClusterReason},
		{name: "3: no central", chassis: testChassis(""), central: nil,
			reason: neutronv1alpha1.CentralNotFoundReason, polled: true, msgHas: []string{"controlplane-ovn"}},
		{name: "4: central not reachable from the chassis's cluster", agentCluster: "compute-a", chassis: testChassis("compute-a"),
			central: testCentral(false), reason: neutronv1alpha1.CentralNotExternallyReachableReason,
			msgHas: []string{"target cluster compute-a", "the management cluster", "spec.southbound.externallyReachable"},
			msgNo:  []string{"northbound"}},
		{name: "4: only the Southbound must be reachable", agentCluster: "compute-a", chassis: testChassis("compute-a"),
			central: testCentral(true), mutate: func(_ *ovnv1alpha1.OVNChassis, c *ovnv1alpha1.OVNCentral) {
				c.Spec.Northbound.ExternallyReachable = false
			}, reason: neutronv1alpha1.ChassisResolvedReason, sb: "ssl:192.0.2.1:30651"},
		{name: "5: no internal Southbound address yet", chassis: testChassis(""), central: testCentral(false),
			mutate: func(_ *ovnv1alpha1.OVNChassis, c *ovnv1alpha1.OVNCentral) { c.Status.Southbound.InternalDBAddress = "" },
			reason: neutronv1alpha1.CentralNotReadyReason, polled: true, msgHas: []string{"its Southbound address"}},
		{name: "5: no node address yet, though the relay has one", agentCluster: "compute-a", chassis: testChassis("compute-a"),
			central: testCentral(true), mutate: func(_ *ovnv1alpha1.OVNChassis, c *ovnv1alpha1.OVNCentral) { c.Status.Southbound.DBAddress = "" },
			reason: neutronv1alpha1.CentralNotReadyReason, polled: true, msgHas: []string{"outside its cluster"}},
		{name: "6: same cluster falls back to the central's Secret", chassis: testChassis(""), central: testCentral(false),
			mutate: func(ch *ovnv1alpha1.OVNChassis, _ *ovnv1alpha1.OVNCentral) { ch.Status.ClientSecretName = "" },
			reason: neutronv1alpha1.ChassisResolvedReason, sb: "ssl:10.0.0.2:6642"},
		{name: "6: same cluster, neither published", chassis: testChassis(""), central: testCentral(false),
			mutate: func(ch *ovnv1alpha1.OVNChassis, c *ovnv1alpha1.OVNCentral) {
				ch.Status.ClientSecretName, c.Status.ClientSecretName = "", ""
			}, reason: neutronv1alpha1.ChassisNotReadyReason, polled: true},
		{name: "6: across clusters there is no fallback", agentCluster: "compute-a", chassis: testChassis("compute-a"), central: testCentral(true),
			mutate: func(ch *ovnv1alpha1.OVNChassis, _ *ovnv1alpha1.OVNCentral) { ch.Status.ClientSecretName = "" },
			reason: neutronv1alpha1.ChassisNotReadyReason, polled: true, msgHas: []string{"OVNChassis controlplane-compute-chassis"}},
		{name: "7: same cluster reads the internal Southbound, never the relay", chassis: testChassis(""), central: testCentral(false),
			reason: neutronv1alpha1.ChassisResolvedReason, sb: "ssl:10.0.0.2:6642",
			msgHas: []string{"ssl:10.0.0.2:6642"}},
		{name: "7: across clusters the node addresses, never the relay's", agentCluster: "compute-a", chassis: testChassis("compute-a"),
			central: testCentral(true), reason: neutronv1alpha1.ChassisResolvedReason, sb: "ssl:192.0.2.1:30651"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mutate != nil {
				tt.mutate(tt.chassis, tt.central)
			}
			checkVerdict(t, DecideChassis(testAgent("agent", tt.agentCluster), tt.chassis, tt.central), tt)
		})
	}
}

// checkVerdict compares a verdict with what its case wants.
func checkVerdict(t *testing.T, v ChassisVerdict, tt chassisCase) {
	t.Helper()
	if v.Reason != tt.reason {
		t.Fatalf("reason = %s (%s), want %s", v.Reason, v.Message, tt.reason)
	}
	if (v.Requeue > 0) != tt.polled {
		t.Errorf("requeue = %s, polled want %v", v.Requeue, tt.polled)
	}
	if (v.Resolved != nil) != (tt.reason == neutronv1alpha1.ChassisResolvedReason) {
		t.Fatalf("resolved = %+v with reason %s", v.Resolved, v.Reason)
	}
	if v.Resolved != nil && v.Resolved.SBAddress != tt.sb {
		t.Errorf("resolved = %+v, want sb %s", v.Resolved, tt.sb)
	}
	for _, s := range tt.msgHas {
		if !strings.Contains(v.Message, s) {
			t.Errorf("message %q lacks %q", v.Message, s)
		}
	}
	for _, s := range tt.msgNo {
		if strings.Contains(strings.ToLower(v.Message), s) {
			t.Errorf("message %q names %q", v.Message, s)
		}
	}
}

// The resolved placement is a copy: the DaemonSet built from it can never
// change the chassis the cache holds.
func TestDecideChassisCopiesPlacement(t *testing.T) {
	chassis := testChassis("")
	v := DecideChassis(testAgent("agent", ""), chassis, testCentral(false))
	if v.Resolved == nil {
		t.Fatalf("not resolved: %s", v.Message)
	}
	v.Resolved.NodeSelector["x"] = "y"
	v.Resolved.Tolerations[0].Key = "changed"
	if _, ok := chassis.Spec.NodeSelector["x"]; ok || chassis.Spec.Tolerations[0].Key != "hypervisor" {
		t.Errorf("the chassis changed with the resolved placement: %+v", chassis.Spec)
	}
}
