package ovnchassis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/ovnchassis"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// assertEvacuationOnManagement makes node a gateway of the chassis on
// compute, gives it a router port in the Northbound, and takes the role
// away: the evacuate Job removes the port's Gateway_Chassis row, and it
// runs on the management cluster, beside the central's client key, never
// on compute, where that key must not go.
func assertEvacuationOnManagement(t *testing.T, compute *testenv.Cluster, ch *ovnv1alpha1.OVNChassis, node string, nb []string) {
	t.Helper()
	ctx := context.Background()
	patch := client.MergeFrom(ch.DeepCopy())
	ch.Spec.Gateway = &ovnv1alpha1.ChassisGatewaySpec{NodeSelector: map[string]string{ovnchassis.GatewayNodeLabel: "true"}}
	if err := env.Management.Client.Patch(ctx, ch, patch); err != nil {
		t.Fatal(err)
	}
	labelNode(t, compute, node, map[string]string{ovnchassis.GatewayNodeLabel: "true"})
	id := waitNodeStatus(t, ch, node, "the node is a gateway", func(n ovnv1alpha1.ChassisNodeStatus) bool { return n.Gateway })
	if _, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "lr-add", "evac-r", "--", "lrp-add", "evac-r", "evac-lrp", "00:00:00:00:ee:01", "10.99.0.1/24",
		"--", "lrp-set-gateway-chassis", "evac-lrp", id, "1")...); err != nil {
		t.Fatal(err)
	}
	mgmtMark, computeMark := auditMark(t, env.Management), auditMark(t, compute)

	unlabelNode(t, compute, node, ovnchassis.GatewayNodeLabel)
	waitNodeStatus(t, ch, node, "the node is evacuated", func(n ovnv1alpha1.ChassisNodeStatus) bool { return !n.Gateway && n.GatewayEvacuated })
	out, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "--bare", "--columns=_uuid", "find", "Gateway_Chassis", "chassis_name="+id)...)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("Gateway_Chassis rows still name the node's chassis: %q (%v)", out, err)
	}
	job := ovnchassis.JobName(ch, ovnchassis.EvacuateJob, node)
	if !createdJob(t, env.Management, mgmtMark, job) {
		t.Errorf("the evacuate Job %s was not created on the management cluster", job)
	}
	if createdJob(t, compute, computeMark, job) {
		t.Errorf("the evacuate Job %s was created on %s, with the central's client key", job, compute.Name)
	}
	if _, err := ovntest.OVS(t, "ovn-nbctl", append(nb, "lr-del", "evac-r")...); err != nil {
		t.Error(err)
	}
}

// waitNodeStatus waits until the chassis's status entry of node satisfies
// ok and returns the node's system-id.
func waitNodeStatus(t *testing.T, ch *ovnv1alpha1.OVNChassis, node, what string, ok func(ovnv1alpha1.ChassisNodeStatus) bool) string {
	t.Helper()
	var id string
	ovntest.Eventually(t, 2*time.Minute, what, func() error {
		cur := &ovnv1alpha1.OVNChassis{}
		if err := env.Management.Client.Get(context.Background(), client.ObjectKeyFromObject(ch), cur); err != nil {
			return err
		}
		for _, n := range cur.Status.Nodes {
			if n.Name == node && ok(n) {
				id = n.SystemID
				return nil
			}
		}
		return errorf("nodes %+v; MaintenanceReady %s: %s", cur.Status.Nodes,
			conditionReason(cur.Status.Conditions, ovnv1alpha1.MaintenanceReadyCondition),
			conditionMessage(cur.Status.Conditions, ovnv1alpha1.MaintenanceReadyCondition))
	})
	return id
}

// auditMark is where c's audit log stands now.
func auditMark(t *testing.T, c *testenv.Cluster) int64 {
	t.Helper()
	mark, err := c.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	return mark
}

// createdJob tells whether the operator created the Job name on c since
// mark.
func createdJob(t *testing.T, c *testenv.Cluster, mark int64, name string) bool {
	t.Helper()
	writes, _, err := c.AuditWrites(mark)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range testenv.OperatorWrites(writes) {
		if w.Verb == "create" && w.Resource == "jobs" && w.Name == name {
			return true
		}
	}
	return false
}
