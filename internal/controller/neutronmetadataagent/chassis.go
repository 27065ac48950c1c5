package neutronmetadataagent

import (
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// ResolvedChassis is what the agent takes from its chassis and central:
// where its pods run, the Southbound database it reads, and the client
// identity it presents there. The maps and slices are copies, so the
// DaemonSet built from them never aliases the cached chassis.
type ResolvedChassis struct {
	// NodeSelector and Tolerations are the chassis's, so the agent runs
	// exactly where ovn-controller does.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// SBAddress is the Southbound database's address list as the agent's
	// cluster reaches it: never the relay, whose read-only copy cannot
	// serve the agent's writes to Chassis_Private.
	SBAddress string
}

// ChassisVerdict is the outcome of DecideChassis: the resolved chassis
// when Reason is ChassisResolved, else the reason and message ChassisReady
// reports and the requeue (zero: a watch brings the fix, nothing is
// polled).
type ChassisVerdict struct {
	Resolved *ResolvedChassis
	Reason   string
	Message  string
	Requeue  time.Duration
}

// clusterPhrase names a cluster in a message.
func clusterPhrase(name string) string {
	if name == "" {
		return "the management cluster"
	}
	return "target cluster " + name
}

// DecideChassis decides ChassisReady from the agent, its chassis and the
// chassis's central, in the order of spec §4.2, first hit wins. A nil
// chassis or central is one that does not exist; the caller reports a
// failed read itself, since it is no verdict about the objects. It is
// pure.
//
//  1. no chassis: ChassisNotFound, polled;
//  2. the agent and the chassis name different clusters:
//     ChassisOnAnotherCluster, until the agent is replaced;
//  3. no central: CentralNotFound, polled;
//  4. the chassis and the central are on different clusters and the
//     central does not publish its Southbound outside its cluster:
//     CentralNotExternallyReachable, until the central changes;
//  5. the Southbound address that cluster reaches is not published yet:
//     CentralNotReady, polled;
//  6. the chassis's client Secret is not published yet (on the central's
//     cluster the central's own stands in): ChassisNotReady, polled;
//  7. ChassisResolved.
func DecideChassis(agent *neutronv1alpha1.NeutronMetadataAgent, chassis *ovnv1alpha1.OVNChassis, central *ovnv1alpha1.OVNCentral) ChassisVerdict {
	if chassis == nil {
		return ChassisVerdict{Reason: neutronv1alpha1.ChassisNotFoundReason, Requeue: chassisPoll,
			Message: fmt.Sprintf("OVNChassis %s does not exist in namespace %s", agent.Spec.ChassisRef.Name, agent.Namespace)}
	}
	agentCluster, chassisCluster := agent.TargetClusterName(), chassis.TargetClusterName()
	if agentCluster != chassisCluster {
		return ChassisVerdict{Reason: neutronv1alpha1.ChassisOnAnotherClusterReason,
			Message: fmt.Sprintf("the agent runs on %s but OVNChassis %s on %s: an agent runs beside its chassis, so both must name the same targetClusterRef",
				clusterPhrase(agentCluster), chassis.Name, clusterPhrase(chassisCluster))}
	}
	if central == nil {
		return ChassisVerdict{Reason: neutronv1alpha1.CentralNotFoundReason, Requeue: chassisPoll,
			Message: fmt.Sprintf("OVNCentral %s of OVNChassis %s does not exist in namespace %s", chassis.Spec.CentralRef.Name, chassis.Name, chassis.Namespace)}
	}
	centralCluster := central.TargetClusterName()
	same := chassisCluster == centralCluster
	if !same && !central.Spec.Southbound.ExternallyReachable {
		// Only the Southbound: unlike the chassis's evacuate Job, the agent
		// never talks to the Northbound.
		return ChassisVerdict{Reason: neutronv1alpha1.CentralNotExternallyReachableReason,
			Message: fmt.Sprintf("the agent runs on %s and OVNCentral %s on %s; set spec.southbound.externallyReachable on the central",
				clusterPhrase(chassisCluster), central.Name, clusterPhrase(centralCluster))}
	}
	sb, where := central.Status.Southbound.InternalDBAddress, "its Southbound address"
	if !same {
		sb, where = central.Status.Southbound.DBAddress, "its Southbound address outside its cluster"
	}
	if sb == "" {
		return ChassisVerdict{Reason: neutronv1alpha1.CentralNotReadyReason, Requeue: chassisPoll,
			Message: "waiting for OVNCentral " + central.Name + " to publish " + where}
	}
	// A published client Secret says the chassis resolved its central, on
	// whose CA its nodes' identities are issued; the agent reads the
	// node's identity from the directory the chassis fills.
	secret := chassis.Status.ClientSecretName
	if secret == "" && same {
		secret = central.Status.ClientSecretName
	}
	if secret == "" {
		return ChassisVerdict{Reason: neutronv1alpha1.ChassisNotReadyReason, Requeue: chassisPoll,
			Message: "waiting for OVNChassis " + chassis.Name + " to publish its client Secret"}
	}
	resolved := &ResolvedChassis{SBAddress: sb, NodeSelector: maps.Clone(chassis.Spec.NodeSelector)}
	for i := range chassis.Spec.Tolerations {
		resolved.Tolerations = append(resolved.Tolerations, *chassis.Spec.Tolerations[i].DeepCopy())
	}
	return ChassisVerdict{Resolved: resolved, Reason: neutronv1alpha1.ChassisResolvedReason,
		Message: "the agent runs on the nodes of OVNChassis " + chassis.Name + " and reads the Southbound database at " + sb}
}
