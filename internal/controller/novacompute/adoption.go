package novacompute

import (
	"fmt"
	"time"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// Adoption. Nova names a nova-compute service by its host name only, and
// a node name may be the host name of a service the pool never ran: a
// brownfield hypervisor, another deployment's. So the pool records, per
// node, the id of the service it adopted (AdoptedServiceID) and disables
// or deletes no other; see DecideService, rules 3, 6 and 7.

// decideAdoption asks for what rule 3 reads about a node with a service
// it has not adopted: whether a pod of the pool runs there. It reports
// whether it asked.
func decideAdoption(e novav1alpha1.NovaComputeNode, obs ServiceObs) (ServiceDecision, bool) {
	switch {
	case e.AdoptedServiceID != "":
		// Adopted, this service or another: nothing to read.
		return ServiceDecision{}, false
	case obs.PodRunning == nil:
		return ServiceDecision{Phase: e.Phase, Action: ServiceCheckPods}, true
	}
	return ServiceDecision{}, false
}

// owns tells whether the listed service is the one the entry adopted.
func owns(e novav1alpha1.NovaComputeNode, obs ServiceObs) bool {
	return obs.Service != nil && e.AdoptedServiceID != "" && obs.Service.ID == e.AdoptedServiceID
}

// refusal describes a listed service the pool does not own.
func refusal(e novav1alpha1.NovaComputeNode, obs ServiceObs) string {
	if e.AdoptedServiceID == "" {
		return fmt.Sprintf("%s (service %s, never adopted)", e.Name, obs.Service.ID)
	}
	return fmt.Sprintf("%s (service %s, adopted %s)", e.Name, obs.Service.ID, e.AdoptedServiceID)
}

// minRequeue is the sooner of two requeues, 0 being none.
func minRequeue(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// AdoptedAfter is the entry's AdoptedServiceID once a node's final
// decision is written: the listed service's id when the decision adopts
// it; none once Nova lists no service for the host, because a service id
// is never listed again, so the next service must be adopted anew, by the
// same rule; else the id recorded, even when another service is listed.
// It is pure.
func AdoptedAfter(e novav1alpha1.NovaComputeNode, obs ServiceObs, d ServiceDecision) string {
	switch {
	case obs.Service == nil:
		return ""
	case d.Adopt:
		return obs.Service.ID
	}
	return e.AdoptedServiceID
}

// ServiceOf picks a node's service among those Nova lists for its host
// name, which are several only when cells share the name: the adopted one
// when it is listed, else the one with the lowest id, so that passes agree
// and the status does not churn. It is pure.
func ServiceOf(svcs []openstack.ComputeService, adopted string) (openstack.ComputeService, bool) {
	if len(svcs) == 0 {
		return openstack.ComputeService{}, false
	}
	best := svcs[0]
	for _, s := range svcs {
		if adopted != "" && s.ID == adopted {
			return s, true
		}
		if s.ID < best.ID {
			best = s
		}
	}
	return best, true
}
