package novacompute

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// ServiceObs is what the Services step has observed of one node so far.
// Some observations cost a call, so they are made only when DecideService
// asks for them; until then they are nil.
type ServiceObs struct {
	// Service is the node's nova-compute service as Nova lists it, with
	// what this pass changed applied; nil when none is registered for the
	// host.
	Service *openstack.ComputeService
	// Handover is set when another live pool takes the node over.
	Handover bool
	// Mapped tells whether the host is among the hypervisors, that is
	// mapped into a cell.
	Mapped *bool
	// PodRunning tells whether a pod of the pool still runs on the node.
	PodRunning *bool
	// ComputeFresh tells whether the node's nova-compute container started
	// less than registrationWindow ago, so its service is about to
	// register.
	ComputeFresh *bool
	// Servers counts the servers, of any project, on the host.
	Servers *int
	// Deleted is set once the service was deleted in this pass, and
	// DeleteRefused once Nova refused to delete it (409) because servers
	// came back.
	Deleted, DeleteRefused bool
	// Failed describes a call for this node that failed in this pass.
	Failed string
}

// ServiceAction is what the executor does next for a node. The first three
// end the node's turn; the others are done, their answer noted in the
// ServiceObs, and DecideService asked again.
type ServiceAction int

const (
	// ServiceKeep writes the decision into the entry and does nothing else.
	ServiceKeep ServiceAction = iota
	// ServiceDrop drops the node's entry.
	ServiceDrop
	// ServiceDiscover keeps the entry Pending and has the pass run host
	// discovery, once for all its unmapped hosts.
	ServiceDiscover
	// ServiceCheckMapping reads whether the host is mapped (Mapped).
	ServiceCheckMapping
	// ServiceCheckPods reads whether a pod of the pool runs on the node
	// (PodRunning).
	ServiceCheckPods
	// ServiceCheckStart reads whether the node's nova-compute container
	// started a moment ago (ComputeFresh).
	ServiceCheckStart
	// ServiceDisable disables the service with the pool's reason.
	ServiceDisable
	// ServiceCountServers counts the servers on the host (Servers).
	ServiceCountServers
	// ServiceDelete deletes the service (Deleted, DeleteRefused).
	ServiceDelete
)

// Final tells whether the action ends the node's turn.
func (a ServiceAction) Final() bool { return a <= ServiceDiscover }

// ServiceBucket is what a node adds to the ServicesReady condition.
type ServiceBucket int

const (
	// BucketNone is a node that adds nothing; an Active one that is up
	// counts among the services up.
	BucketNone ServiceBucket = iota
	// BucketNoService is a Pending or Active node without a service yet.
	BucketNoService
	// BucketUnmapped is a registered host not mapped into a cell yet.
	BucketUnmapped
	// BucketDown is an Active node whose service reports down.
	BucketDown
	// BucketDraining is a Draining node with servers still on it.
	BucketDraining
	// BucketFailed is a node a call failed for; it is retried.
	BucketFailed
	// BucketNotAdopted is a node whose host name Nova lists a service for
	// that the pool did not adopt, and so never disables or deletes.
	BucketNotAdopted
)

// ServiceDecision is what DecideService makes of one node.
type ServiceDecision struct {
	// Phase is the node's next phase.
	Phase string
	// Action is what to do next.
	Action ServiceAction
	// Bucket is what the node adds to the condition.
	Bucket ServiceBucket
	// Instances is the entry's server count once Servers was observed:
	// the count while the node drains, nil once it releases.
	Instances *int32
	// Failure describes the failed call of BucketFailed.
	Failure string
	// Adopt records the listed service as the pool's own in the entry
	// (AdoptedServiceID).
	Adopt bool
	// Refusal describes the service of BucketNotAdopted.
	Refusal string
	// Requeue is the pass the node needs next; 0 asks for none.
	Requeue time.Duration
}

// DecideService moves one node's entry on from what Nova reports. It is
// pure, so every rule is table-tested; the executor calls it again after
// each action that is not final. Nova names a service by host name only,
// and a host name may be a service the pool never ran (a brownfield host,
// another deployment's), so the pool acts on a service only once it has
// adopted it: the service is "own" when its id is the entry's
// AdoptedServiceID. The rules:
//
//  1. A call for the node that failed keeps its phase; it is reported
//     and retried in 30 s, and the other nodes still move on.
//  2. A Pending or Active node without a service is Pending and waits
//     30 s for one; an adoption is forgotten with its service.
//  3. A Pending or Active node with a service it has not adopted adopts
//     it while a pod of the pool runs on the node: that pod's
//     nova-compute registered the host's service or took it over, since
//     Nova keeps one service per host name. How long the pod has run
//     does not matter, so a pool that ran before adoption existed adopts
//     its running nodes on its first pass. Without such a pod the node is
//     looked at again in 30 s, so a pod that starts is not missed. A
//     service whose id differs from the adopted one is never adopted
//     over it and is reported (ServiceNotAdopted).
//  4. A Pending node with a service asks whether its host is mapped. A
//     mapped host is Active; an unmapped one stays Pending, has host
//     discovery run and is looked at again in 10 s.
//  5. An Active node whose service is not up is reported down. Mapping
//     is not checked again once a node is Active.
//  6. A Draining node without a service is dropped. A service that is not
//     its own is neither disabled nor counted: the node is Releasing at
//     once and reported. An own enabled service is disabled first; one
//     someone else disabled keeps its reason. Then the servers are
//     counted: with servers left the node waits 30 s, with none it is
//     Releasing and looked at again in 1 s.
//  7. A Releasing node without a service, or handed over, is dropped
//     without a call. Otherwise, while a pod of the pool runs on the node
//     it waits 10 s; once the pod is gone an own service is deleted and
//     the entry dropped, or, when Nova refuses because servers came back,
//     the node is Draining again. A service that is not its own is left
//     as it is and the entry dropped, reported.
//  8. Any other entry, a Conflict, is left as it is.
//
// The pool never enables a service and never migrates a server.
func DecideService(e novav1alpha1.NovaComputeNode, obs ServiceObs) ServiceDecision {
	if obs.Failed != "" {
		return ServiceDecision{Phase: e.Phase, Bucket: BucketFailed, Failure: obs.Failed, Requeue: apiErrorRequeue}
	}
	switch e.Phase {
	case novav1alpha1.NodePending, novav1alpha1.NodeActive:
		return decideServing(e, obs)
	case novav1alpha1.NodeDraining:
		return decideDraining(e, obs)
	case novav1alpha1.NodeReleasing:
		return decideReleasing(e, obs)
	}
	return ServiceDecision{Phase: e.Phase}
}

// decideServing is rules 2 to 5.
func decideServing(e novav1alpha1.NovaComputeNode, obs ServiceObs) ServiceDecision {
	switch {
	case obs.Service == nil && obs.ComputeFresh == nil:
		return ServiceDecision{Phase: novav1alpha1.NodePending, Action: ServiceCheckStart}
	case obs.Service == nil:
		// A nova-compute that just started registers within seconds, and
		// nothing in Nova can be watched: look again soon, and only at the
		// slow pace once the start is long past.
		requeue := nodeWaitRequeue
		if *obs.ComputeFresh {
			requeue = registrationPoll
		}
		return ServiceDecision{Phase: novav1alpha1.NodePending, Bucket: BucketNoService, Requeue: requeue}
	}
	if d, asked := decideAdoption(e, obs); asked {
		return d
	}
	d := decideMapping(e, obs)
	switch {
	case !d.Action.Final():
		// Asked about the mapping; decided on the answer.
	case owns(e, obs):
	case e.AdoptedServiceID != "":
		// Another service took the host name: whatever else holds, the
		// node is reported, and this service is never the pool's.
		d.Bucket, d.Refusal = BucketNotAdopted, refusal(e, obs)
	case *obs.PodRunning:
		d.Adopt = true
	default:
		// No pod event wakes the pool when its pod starts, and the
		// DaemonSet's may come late: the start must not pass unseen.
		d.Requeue = minRequeue(d.Requeue, nodeWaitRequeue)
	}
	return d
}

// decideMapping is rules 4 and 5, for a node with a service.
func decideMapping(e novav1alpha1.NovaComputeNode, obs ServiceObs) ServiceDecision {
	pending := e.Phase == novav1alpha1.NodePending
	switch {
	case pending && obs.Mapped == nil:
		return ServiceDecision{Phase: novav1alpha1.NodePending, Action: ServiceCheckMapping}
	case pending && !*obs.Mapped:
		return ServiceDecision{Phase: novav1alpha1.NodePending, Action: ServiceDiscover, Bucket: BucketUnmapped, Requeue: shortRequeue}
	case obs.Service.State != "up":
		return ServiceDecision{Phase: novav1alpha1.NodeActive, Bucket: BucketDown}
	}
	return ServiceDecision{Phase: novav1alpha1.NodeActive}
}

// DisableObserved tells whether a pass sees, for the first time, the
// service of a draining node disabled by this pool: the entry written by
// the last pass still reads enabled, and Nova reads disabled with the
// pool's reason. That happens when Nova applied a disable whose reply the
// pool never got (a timeout under load), and the pass then owes the event
// the call would have sent.
func DisableObserved(prev novav1alpha1.NovaComputeNode, svc openstack.ComputeService, reason string) bool {
	return prev.Phase == novav1alpha1.NodeDraining && prev.ServiceStatus == "enabled" &&
		svc.Status == "disabled" && svc.DisabledReason == reason
}

// decideDraining is rule 6.
func decideDraining(e novav1alpha1.NovaComputeNode, obs ServiceObs) ServiceDecision {
	draining := novav1alpha1.NodeDraining
	switch {
	case obs.Service == nil:
		return ServiceDecision{Phase: draining, Action: ServiceDrop}
	case !owns(e, obs):
		// Not the pool's to disable, and its servers are not the pool's to
		// wait for: the pod goes, the service stays as it is.
		return ServiceDecision{Phase: novav1alpha1.NodeReleasing, Bucket: BucketNotAdopted, Refusal: refusal(e, obs), Requeue: releaseRequeue}
	case obs.Service.Status == "enabled":
		return ServiceDecision{Phase: draining, Action: ServiceDisable}
	case obs.Servers == nil:
		return ServiceDecision{Phase: draining, Action: ServiceCountServers}
	case *obs.Servers > 0:
		n := int32(*obs.Servers) //nolint:gosec // a host runs far fewer than 2^31 servers
		return ServiceDecision{Phase: draining, Bucket: BucketDraining, Instances: &n, Requeue: nodeWaitRequeue}
	}
	return ServiceDecision{Phase: novav1alpha1.NodeReleasing, Requeue: releaseRequeue}
}

// releaseRequeue is how soon the pass after a node turns Releasing comes.
// The DaemonSet step runs before this one and so still kept the node's pod;
// only the next pass renders the DaemonSet without it, and no event starts
// that pass (status writes do not), so a longer wait is pure delay.
const releaseRequeue = time.Second

// decideReleasing is rule 7.
func decideReleasing(e novav1alpha1.NovaComputeNode, obs ServiceObs) ServiceDecision {
	releasing := novav1alpha1.NodeReleasing
	if obs.Service != nil && !obs.Handover && !owns(e, obs) {
		return decideReleasingForeign(e, obs)
	}
	switch {
	case obs.Service == nil || obs.Handover:
		return ServiceDecision{Phase: releasing, Action: ServiceDrop}
	case obs.Deleted:
		return ServiceDecision{Phase: releasing, Action: ServiceDrop, Requeue: shortRequeue}
	case obs.DeleteRefused:
		return ServiceDecision{Phase: novav1alpha1.NodeDraining, Requeue: shortRequeue}
	case obs.PodRunning == nil:
		return ServiceDecision{Phase: releasing, Action: ServiceCheckPods}
	case *obs.PodRunning:
		return ServiceDecision{Phase: releasing, Requeue: shortRequeue}
	}
	return ServiceDecision{Phase: releasing, Action: ServiceDelete}
}

// decideReleasingForeign is rule 7 for a service the pool does not own:
// it is never deleted; the entry waits for the pod like any other, so the
// pool's own nova-compute is gone before the node is, and is dropped.
func decideReleasingForeign(e novav1alpha1.NovaComputeNode, obs ServiceObs) ServiceDecision {
	releasing := novav1alpha1.NodeReleasing
	switch {
	case obs.PodRunning == nil:
		return ServiceDecision{Phase: releasing, Action: ServiceCheckPods}
	case *obs.PodRunning:
		return ServiceDecision{Phase: releasing, Bucket: BucketNotAdopted, Refusal: refusal(e, obs), Requeue: shortRequeue}
	}
	return ServiceDecision{Phase: releasing, Action: ServiceDrop, Bucket: BucketNotAdopted, Refusal: refusal(e, obs)}
}

// ServiceResult is one node's final decision in a pass.
type ServiceResult struct {
	// Node is the node's name.
	Node string
	ServiceDecision
}

// Discovery is what running host discovery reported: the state of the
// Job, or why it cannot run.
type Discovery struct {
	State string
	Err   error
	// Replaced is true when the pass deleted a finished Job so that a new
	// one can start; the pass that creates it comes after
	// discoveryRestartRequeue rather than the usual wait.
	Replaced bool
}

// discoveryRestartRequeue is how soon the pass after a Job's deletion
// comes. The deleting pass cannot create the new Job itself: its cached
// read may still hold the old one, which a create-only apply would take
// for the new. Nothing else wakes the pool, since it watches no Job, and
// each node still unmapped waits for that pass.
const discoveryRestartRequeue = time.Second

// ServicesReport is the ServicesReady condition of a pass and the requeue
// the pass asks for.
type ServicesReport struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	Outcome flow.Outcome
}

// DecideServicesReady derives ServicesReady and the step's outcome from the
// nodes' final decisions and, when a host is unmapped, from host discovery.
// The pass asks for the shortest requeue any node needs, none when no node
// does: the executor adds the settled pool's resync. The reasons, first
// match wins:
//
//  1. HostDiscoveryError when discovery was needed and cannot run; retried
//     in 10 s.
//  2. ComputeAPIError when a call for some node failed. Discovery still
//     runs first, so a failing node never holds another's mapping back.
//  3. WaitingForHostMapping names the unmapped hosts and the Job's state;
//     when the pass deleted a finished Job, the next pass comes in 1 s.
//  4. WaitingForServices names the nodes without a service.
//  5. ServiceNotAdopted names the nodes whose host name Nova lists a
//     service for that the pool did not adopt, and that service.
//  6. ServicesDown names the Active nodes whose service is down.
//  7. Draining (True) lists the draining nodes with their server counts.
//  8. ServicesUp (True) counts the Active nodes.
func DecideServicesReady(results []ServiceResult, discovery Discovery) ServicesReport {
	outcome := flow.Continue
	var noService, unmapped, down, draining, failed, notAdopted []string
	active := 0
	for _, res := range results {
		outcome = flow.Merge(outcome, flow.Requeue(res.Requeue))
		switch res.Bucket {
		case BucketNoService:
			noService = append(noService, res.Node)
		case BucketUnmapped:
			unmapped = append(unmapped, res.Node)
		case BucketDown:
			down = append(down, res.Node)
		case BucketDraining:
			draining = append(draining, fmt.Sprintf("%s (%d instance(s))", res.Node, *res.Instances))
		case BucketFailed:
			failed = append(failed, res.Failure)
		case BucketNotAdopted:
			notAdopted = append(notAdopted, res.Refusal)
		}
		if res.Phase == novav1alpha1.NodeActive {
			active++
		}
	}
	notReady := func(reason, message string) ServicesReport {
		return ServicesReport{Status: metav1.ConditionFalse, Reason: reason, Message: message, Outcome: outcome}
	}
	switch {
	case len(unmapped) > 0 && discovery.Err != nil:
		r := notReady(novav1alpha1.HostDiscoveryErrorReason, discovery.Err.Error())
		r.Outcome = flow.Requeue(shortRequeue)
		return r
	case len(failed) > 0:
		return notReady(novav1alpha1.ComputeAPIErrorReason, joinSorted(failed, "; "))
	case len(unmapped) > 0:
		r := notReady(novav1alpha1.WaitingForHostMappingReason, fmt.Sprintf("hosts not mapped into a cell yet: %s; host discovery: %s",
			joinSorted(unmapped, ", "), discovery.State))
		if discovery.Replaced {
			r.Outcome = flow.Merge(r.Outcome, flow.Requeue(discoveryRestartRequeue))
		}
		return r
	case len(noService) > 0:
		return notReady(novav1alpha1.WaitingForServicesReason, "no nova-compute service registered yet for: "+joinSorted(noService, ", "))
	case len(notAdopted) > 0:
		return notReady(novav1alpha1.ServiceNotAdoptedReason, "services of these nodes' host names are not the pool's own; it never disables or deletes them: "+
			joinSorted(notAdopted, ", "))
	case len(down) > 0:
		return notReady(novav1alpha1.ServicesDownReason, "nova-compute services down: "+joinSorted(down, ", "))
	case len(draining) > 0:
		return ServicesReport{Status: metav1.ConditionTrue, Reason: novav1alpha1.DrainingReason, Outcome: outcome,
			Message: "draining, waiting for their servers to go: " + joinSorted(draining, ", ")}
	}
	return ServicesReport{Status: metav1.ConditionTrue, Reason: novav1alpha1.ServicesUpReason, Outcome: outcome,
		Message: fmt.Sprintf("%d service(s) up and mapped", active)}
}

// joinSorted sorts items and joins them with sep.
func joinSorted(items []string, sep string) string {
	sort.Strings(items)
	return strings.Join(items, sep)
}
