package controlplane

import (
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// OVNVerdict is OVNReady's status, reason and message.
type OVNVerdict struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// DecideOVN judges a ready-to-use central from what the pass read: the
// central (nil when it does not exist). Neutron runs beside the
// ControlPlane, on the management cluster, so a central placed on a
// compute cluster must publish both databases outside it. It is pure; the
// namespace and read-error arms are decided before.
func DecideOVN(central *ovnv1alpha1.OVNCentral) OVNVerdict {
	if central == nil {
		return OVNVerdict{metav1.ConditionFalse, c5c3v1alpha1.OVNCentralNotFoundReason, "the referenced OVNCentral does not exist"}
	}
	st := central.Status
	placed := central.TargetClusterName() != ""
	if placed && (!central.Spec.Northbound.ExternallyReachable || !central.Spec.Southbound.ExternallyReachable) {
		return OVNVerdict{metav1.ConditionFalse, c5c3v1alpha1.OVNCentralNotExternallyReachableReason,
			"OVNCentral " + central.Name + " runs on target cluster " + central.TargetClusterName() +
				" and Neutron on the management cluster; set spec.northbound.externallyReachable and spec.southbound.externallyReachable on the central"}
	}
	ready := apimeta.FindStatusCondition(st.Conditions, anvilmeta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration < central.Generation {
		reason, msg := "Reconciling", "has not reported Ready yet"
		if ready != nil {
			reason, msg = ready.Reason, ready.Message
		}
		return OVNVerdict{metav1.ConditionFalse, c5c3v1alpha1.WaitingForOVNCentralReason,
			"OVNCentral " + central.Name + " is not Ready: " + reason + ": " + msg}
	}
	nb, sb, nbField, sbField := st.Northbound.InternalDBAddress, st.Southbound.InternalDBAddress,
		"status.northbound.internalDbAddress", "status.southbound.internalDbAddress"
	if placed {
		nb, sb, nbField, sbField = st.Northbound.DBAddress, st.Southbound.DBAddress, "status.northbound.dbAddress", "status.southbound.dbAddress"
	}
	var missing []string
	for _, f := range []struct{ value, name string }{{nb, nbField}, {sb, sbField}, {st.ClientSecretName, "status.clientSecretName"}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return OVNVerdict{metav1.ConditionFalse, c5c3v1alpha1.OVNEndpointsPendingReason,
			"OVNCentral " + central.Name + " has not published " + strings.Join(missing, ", ")}
	}
	return OVNVerdict{metav1.ConditionTrue, c5c3v1alpha1.OVNCentralReadyReason,
		"OVNCentral " + central.Name + " serves the northbound at " + nb + " and the southbound at " + sb}
}
