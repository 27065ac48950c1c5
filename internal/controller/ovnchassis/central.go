package ovnchassis

import (
	"fmt"
	"time"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// CentralAddresses are what a chassis uses of its central.
type CentralAddresses struct {
	// NB is the Northbound address list the evacuate Job dials: always
	// the central's own cluster's, where that Job runs.
	NB string
	// ClientSecret is the central's client identity on the management
	// cluster, which only the evacuate Job presents.
	ClientSecret string
	// SB is the Southbound database address list the chassis-del Job
	// dials; never the relay, which serves reads.
	SB string
	// Remote is what ovn-controller dials: the relay when there is one
	// the chassis can reach, else the Southbound members.
	Remote string
	// CrossCluster is set when the chassis and the central live on
	// different clusters, so the central's CA is published there.
	CrossCluster bool
}

// CentralVerdict is the outcome of DecideCentral: either addresses, or the
// reason and message CentralReady reports, with the requeue (zero: the
// central's watch brings the fix).
type CentralVerdict struct {
	Addresses CentralAddresses
	Reason    string
	Message   string
	Requeue   time.Duration
}

// SameCluster reports whether a chassis and its central place their
// children on the same cluster: both on the management cluster, or both on
// the same compute cluster.
func SameCluster(chassisCluster, centralCluster string) bool { return chassisCluster == centralCluster }

// clusterPhrase names a cluster in a message.
func clusterPhrase(name string) string {
	if name == "" {
		return "the management cluster"
	}
	return "target cluster " + name
}

// DecideCentral picks the addresses a chassis uses from its central's spec
// and status, first hit wins (spec §3.4): the central must run on the
// management cluster, where the chassis's node identities are issued
// (docs/design/ovn.md); a central on another cluster must publish both
// databases outside its cluster; the addresses and the client identity
// must be published; and the central must not be upgrading.
func DecideCentral(chassis *ovnv1alpha1.OVNChassis, central *ovnv1alpha1.OVNCentral) CentralVerdict {
	chassisCluster, centralCluster := chassis.TargetClusterName(), central.TargetClusterName()
	if centralCluster != "" {
		return CentralVerdict{
			Reason: ovnv1alpha1.CentralPlacedElsewhereReason,
			Message: fmt.Sprintf("OVNCentral %s runs on %s; a chassis's node identities are issued next to its central's CA, which Anvil does only on the management cluster",
				central.Name, clusterPhrase(centralCluster)),
		}
	}
	st := central.Status
	if SameCluster(chassisCluster, centralCluster) {
		remote := st.RelayAddress
		if remote == "" {
			remote = st.Southbound.InternalDBAddress
		}
		if st.Southbound.InternalDBAddress == "" || st.ClientSecretName == "" {
			return notReady(central, "its Southbound address and its client Secret")
		}
		return upgradingOr(central, CentralAddresses{NB: st.Northbound.InternalDBAddress, SB: st.Southbound.InternalDBAddress, Remote: remote,
			ClientSecret: st.ClientSecretName})
	}
	if !central.Spec.Northbound.ExternallyReachable || !central.Spec.Southbound.ExternallyReachable {
		return CentralVerdict{
			Reason: ovnv1alpha1.CentralNotExternallyReachableReason,
			Message: fmt.Sprintf("the chassis runs on %s and OVNCentral %s on %s; set spec.northbound.externallyReachable and spec.southbound.externallyReachable on the central",
				clusterPhrase(chassisCluster), central.Name, clusterPhrase(centralCluster)),
		}
	}
	if st.Southbound.DBAddress == "" || st.ClientSecretName == "" {
		return notReady(central, "its Southbound address outside its cluster and its client Secret")
	}
	remote := st.Southbound.DBAddress
	if r := central.Spec.Relay; r != nil && r.ExternallyReachable {
		if st.RelayDBAddress == "" {
			return notReady(central, "its relay's node address")
		}
		remote = st.RelayDBAddress
	}
	return upgradingOr(central, CentralAddresses{NB: st.Northbound.InternalDBAddress, SB: st.Southbound.DBAddress, Remote: remote,
		ClientSecret: st.ClientSecretName, CrossCluster: true})
}

// notReady waits for the central to publish what.
func notReady(central *ovnv1alpha1.OVNCentral, what string) CentralVerdict {
	return CentralVerdict{
		Reason:  ovnv1alpha1.CentralNotReadyReason,
		Message: "waiting for OVNCentral " + central.Name + " to publish " + what,
		Requeue: centralPoll,
	}
}

// upgradingOr holds a chassis while its central rolls to a new image, so
// chassis never run against a half-upgraded central; the chassis's own
// image is not compared.
func upgradingOr(central *ovnv1alpha1.OVNCentral, a CentralAddresses) CentralVerdict {
	if central.Status.InstalledImage != central.ResolvedImage() {
		return CentralVerdict{
			Reason:  ovnv1alpha1.CentralUpgradingReason,
			Message: "OVNCentral " + central.Name + " is moving to " + central.ResolvedImage(),
			Requeue: centralPoll,
		}
	}
	return CentralVerdict{
		Addresses: a,
		Reason:    ovnv1alpha1.CentralResolvedReason,
		Message:   "the chassis connect to OVNCentral " + central.Name + " at " + a.Remote,
	}
}
