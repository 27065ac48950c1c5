package novacompute

import (
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// nova is how Nova and the pool's cluster answer for one node in a
// TestDecideService case.
type nova struct {
	service       *openstack.ComputeService // nil: not registered
	adopted       string                    // the entry's AdoptedServiceID
	handover      bool
	mapped        bool
	podRunning    bool
	computeFresh  bool
	servers       int
	disableFails  bool
	countFails    bool
	deleteRefused bool // 409: servers came back
	deleteFails   bool
}

// walk plays the executor: it asks DecideService, answers each action from
// n, and returns the actions asked for and the final decision.
func walk(t *testing.T, phase string, n nova) ([]ServiceAction, ServiceDecision) {
	t.Helper()
	asked, d, _ := walkEntry(t, novav1alpha1.NovaComputeNode{Name: "n1", Phase: phase, AdoptedServiceID: n.adopted}, n)
	return asked, d
}

// walkEntry is walk for an entry as a pass finds it; it also returns the
// observation the final decision was made on.
func walkEntry(t *testing.T, e novav1alpha1.NovaComputeNode, n nova) ([]ServiceAction, ServiceDecision, ServiceObs) {
	t.Helper()
	obs := ServiceObs{Handover: n.handover}
	if n.service != nil {
		svc := *n.service
		obs.Service = &svc
	}
	var asked []ServiceAction
	// Each answer changes the observation, so a chain longer than the
	// number of actions means the decision does not move on.
	for range 8 {
		d := DecideService(e, obs)
		if d.Action.Final() {
			return asked, d, obs
		}
		asked = append(asked, d.Action)
		switch d.Action {
		case ServiceCheckMapping:
			obs.Mapped = ptr.To(n.mapped)
		case ServiceCheckPods:
			obs.PodRunning = ptr.To(n.podRunning)
		case ServiceCheckStart:
			obs.ComputeFresh = ptr.To(n.computeFresh)
		case ServiceDisable:
			if n.disableFails {
				obs.Failed = "disabling the service of n1: boom"
				continue
			}
			obs.Service.Status = "disabled"
		case ServiceCountServers:
			if n.countFails {
				obs.Failed = "counting the servers on n1: boom"
				continue
			}
			obs.Servers = ptr.To(n.servers)
		case ServiceDelete:
			switch {
			case n.deleteRefused:
				obs.DeleteRefused = true
			case n.deleteFails:
				obs.Failed = "deleting the service of n1: boom"
			default:
				obs.Deleted = true
			}
		}
	}
	t.Fatalf("no final decision after %v", asked)
	return nil, ServiceDecision{}, obs
}

func TestDecideService(t *testing.T) {
	const (
		pending   = novav1alpha1.NodePending
		active    = novav1alpha1.NodeActive
		draining  = novav1alpha1.NodeDraining
		releasing = novav1alpha1.NodeReleasing
		conflict  = novav1alpha1.NodeConflict
	)
	// own is the id the rows that predate adoption record as adopted: the
	// pool ran those nodes' nova-compute, so the service is its own.
	const own = "svc-1"
	svc := func(status, state string) *openstack.ComputeService {
		return &openstack.ComputeService{ID: "svc-1", Host: "n1", Status: status, State: state}
	}
	up, down := svc("enabled", "up"), svc("enabled", "down")
	disabled := svc("disabled", "up")
	foreign := &openstack.ComputeService{ID: "svc-1", Host: "n1", Status: "disabled", State: "up",
		DisabledReason: "Hypervisor CRD: spec.maintenance=manual"}
	var (
		check    = ServiceCheckMapping
		pods     = ServiceCheckPods
		start    = ServiceCheckStart
		disable  = ServiceDisable
		count    = ServiceCountServers
		del      = ServiceDelete
		instance = func(n int32) *int32 { return &n }
	)
	tests := []struct {
		name  string
		phase string
		nova  nova
		asked []ServiceAction
		want  ServiceDecision
	}{
		// Rule 2: no service yet, or not any more.
		{name: "Pending, not registered, waits for a service", phase: pending,
			asked: []ServiceAction{start},
			want:  ServiceDecision{Phase: pending, Bucket: BucketNoService, Requeue: 30 * time.Second}},
		{name: "Pending, not registered, nova-compute just started, looks again soon", phase: pending, nova: nova{computeFresh: true},
			asked: []ServiceAction{start},
			want:  ServiceDecision{Phase: pending, Bucket: BucketNoService, Requeue: 3 * time.Second}},
		{name: "Active, service gone, is Pending again", phase: active,
			asked: []ServiceAction{start},
			want:  ServiceDecision{Phase: pending, Bucket: BucketNoService, Requeue: 30 * time.Second}},
		// Rule 3: adoption. A service is the pool's own once its id is
		// recorded, which happens only while a pod of the pool runs on the
		// node and its nova-compute started a moment ago.
		{name: "Pending, a service, its pod running: adopted, then mapped", phase: pending,
			nova:  nova{service: up, podRunning: true, computeFresh: true, mapped: true},
			asked: []ServiceAction{pods, check},
			want:  ServiceDecision{Phase: active, Adopt: true}},
		{name: "Pending, unmapped, its pod running: adopted while discovery runs", phase: pending,
			nova:  nova{service: up, podRunning: true, computeFresh: true},
			asked: []ServiceAction{pods, check},
			want:  ServiceDecision{Phase: pending, Action: ServiceDiscover, Bucket: BucketUnmapped, Requeue: 10 * time.Second, Adopt: true}},
		{name: "Active, a service, its pod running: adopted", phase: active, nova: nova{service: down, podRunning: true, computeFresh: true},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: active, Bucket: BucketDown, Adopt: true}},
		{name: "Pending, a brownfield service of the node's name, no pod of the pool: not adopted, looked at in 30 s", phase: pending,
			nova:  nova{service: up, mapped: true},
			asked: []ServiceAction{pods, check},
			want:  ServiceDecision{Phase: active, Requeue: 30 * time.Second}},
		{name: "Active, a brownfield service, no pod of the pool: not adopted, not reported", phase: active, nova: nova{service: up},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: active, Requeue: 30 * time.Second}},
		{name: "Active, its pod started long ago (a pool from before adoption): adopted", phase: active, nova: nova{service: up, podRunning: true},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: active, Adopt: true}},
		{name: "Pending, unmapped, no pod: discovery runs without adoption", phase: pending, nova: nova{service: up},
			asked: []ServiceAction{pods, check},
			want:  ServiceDecision{Phase: pending, Action: ServiceDiscover, Bucket: BucketUnmapped, Requeue: 10 * time.Second}},
		{name: "Active, adopted: the pods are not read", phase: active, nova: nova{adopted: own, service: up, podRunning: true, computeFresh: true},
			want: ServiceDecision{Phase: active}},
		{name: "Active, another service took the host name: reported, never adopted over the recorded one", phase: active,
			nova: nova{adopted: "svc-0", service: up, podRunning: true, computeFresh: true},
			want: ServiceDecision{Phase: active, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, adopted svc-0)"}},
		{name: "Pending, another service than the adopted one, mapped: Active and reported", phase: pending,
			nova:  nova{adopted: "svc-0", service: up, mapped: true},
			asked: []ServiceAction{check},
			want:  ServiceDecision{Phase: active, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, adopted svc-0)"}},
		{name: "Active, the adopted service gone: Pending again", phase: active, nova: nova{adopted: own},
			asked: []ServiceAction{start},
			want:  ServiceDecision{Phase: pending, Bucket: BucketNoService, Requeue: 30 * time.Second}},
		// Rule 4: mapping.
		{name: "Pending, registered, unmapped, runs discovery", phase: pending, nova: nova{adopted: own, service: up},
			asked: []ServiceAction{check},
			want:  ServiceDecision{Phase: pending, Action: ServiceDiscover, Bucket: BucketUnmapped, Requeue: 10 * time.Second}},
		{name: "Pending, registered down, unmapped, is unmapped first", phase: pending, nova: nova{adopted: own, service: down},
			asked: []ServiceAction{check},
			want:  ServiceDecision{Phase: pending, Action: ServiceDiscover, Bucket: BucketUnmapped, Requeue: 10 * time.Second}},
		{name: "Pending, registered up, mapped, is Active", phase: pending, nova: nova{adopted: own, service: up, mapped: true},
			asked: []ServiceAction{check}, want: ServiceDecision{Phase: active}},
		{name: "Pending, registered down, mapped, is Active and down", phase: pending, nova: nova{adopted: own, service: down, mapped: true},
			asked: []ServiceAction{check}, want: ServiceDecision{Phase: active, Bucket: BucketDown}},
		{name: "Pending, disabled by someone, mapped, is Active and left disabled", phase: pending, nova: nova{adopted: own, service: foreign, mapped: true},
			asked: []ServiceAction{check}, want: ServiceDecision{Phase: active}},
		// Rule 4: an Active node is not asked about its mapping again.
		{name: "Active, up", phase: active, nova: nova{adopted: own, service: up}, want: ServiceDecision{Phase: active}},
		{name: "Active, up, no longer listed as mapped", phase: active, nova: nova{adopted: own, service: up, mapped: false},
			want: ServiceDecision{Phase: active}},
		{name: "Active, down", phase: active, nova: nova{adopted: own, service: down}, want: ServiceDecision{Phase: active, Bucket: BucketDown}},
		{name: "Active, disabled, is never enabled", phase: active, nova: nova{adopted: own, service: disabled}, want: ServiceDecision{Phase: active}},
		{name: "Active, handover flag is not read", phase: active, nova: nova{adopted: own, service: up, handover: true}, want: ServiceDecision{Phase: active}},
		// Rule 5: draining.
		{name: "Draining, service gone, is dropped", phase: draining,
			want: ServiceDecision{Phase: draining, Action: ServiceDrop}},
		{name: "Draining, enabled, servers left", phase: draining, nova: nova{adopted: own, service: up, servers: 3},
			asked: []ServiceAction{disable, count},
			want:  ServiceDecision{Phase: draining, Bucket: BucketDraining, Instances: instance(3), Requeue: 30 * time.Second}},
		{name: "Draining, enabled and down, is disabled all the same", phase: draining, nova: nova{adopted: own, service: down, servers: 1},
			asked: []ServiceAction{disable, count},
			want:  ServiceDecision{Phase: draining, Bucket: BucketDraining, Instances: instance(1), Requeue: 30 * time.Second}},
		{name: "Draining, enabled, no server left, is Releasing", phase: draining, nova: nova{adopted: own, service: up},
			asked: []ServiceAction{disable, count},
			want:  ServiceDecision{Phase: releasing, Requeue: time.Second}},
		{name: "Draining, disabled by the pool, is not disabled again", phase: draining, nova: nova{adopted: own, service: disabled, servers: 2},
			asked: []ServiceAction{count},
			want:  ServiceDecision{Phase: draining, Bucket: BucketDraining, Instances: instance(2), Requeue: 30 * time.Second}},
		{name: "Draining, disabled by someone else, keeps that reason", phase: draining, nova: nova{adopted: own, service: foreign},
			asked: []ServiceAction{count},
			want:  ServiceDecision{Phase: releasing, Requeue: time.Second}},
		{name: "Draining, the disable fails, nothing is counted", phase: draining, nova: nova{adopted: own, service: up, disableFails: true},
			asked: []ServiceAction{disable},
			want:  ServiceDecision{Phase: draining, Bucket: BucketFailed, Failure: "disabling the service of n1: boom", Requeue: 30 * time.Second}},
		{name: "Draining, the count fails", phase: draining, nova: nova{adopted: own, service: disabled, countFails: true},
			asked: []ServiceAction{count},
			want:  ServiceDecision{Phase: draining, Bucket: BucketFailed, Failure: "counting the servers on n1: boom", Requeue: 30 * time.Second}},
		{name: "Draining, the pods are not read", phase: draining, nova: nova{adopted: own, service: disabled, podRunning: true},
			asked: []ServiceAction{count},
			want:  ServiceDecision{Phase: releasing, Requeue: time.Second}},
		// Rule 6 for a service the pool does not own: never disabled,
		// and its servers are not the pool's to wait for.
		{name: "Draining, a brownfield service never adopted: not disabled, not counted, Releasing", phase: draining,
			nova: nova{service: up, servers: 2, podRunning: true},
			want: ServiceDecision{Phase: releasing, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, never adopted)", Requeue: time.Second}},
		{name: "Draining, the recorded id differs from the live service's: refused", phase: draining,
			nova: nova{adopted: "svc-0", service: up, servers: 1},
			want: ServiceDecision{Phase: releasing, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, adopted svc-0)", Requeue: time.Second}},
		{name: "Draining, a foreign service disabled by someone else: not counted either", phase: draining, nova: nova{service: foreign},
			want: ServiceDecision{Phase: releasing, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, never adopted)", Requeue: time.Second}},
		// Rule 7: releasing.
		{name: "Releasing, service gone, is dropped without a call", phase: releasing,
			want: ServiceDecision{Phase: releasing, Action: ServiceDrop}},
		{name: "Releasing, handed over, is dropped without a call", phase: releasing, nova: nova{adopted: own, service: up, handover: true},
			want: ServiceDecision{Phase: releasing, Action: ServiceDrop}},
		{name: "Releasing, the pod still runs", phase: releasing, nova: nova{adopted: own, service: disabled, podRunning: true},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: releasing, Requeue: 10 * time.Second}},
		{name: "Releasing, the pod is gone, the service is deleted", phase: releasing, nova: nova{adopted: own, service: disabled},
			asked: []ServiceAction{pods, del},
			want:  ServiceDecision{Phase: releasing, Action: ServiceDrop, Requeue: 10 * time.Second}},
		{name: "Releasing, an enabled service is deleted without disabling", phase: releasing, nova: nova{adopted: own, service: up},
			asked: []ServiceAction{pods, del},
			want:  ServiceDecision{Phase: releasing, Action: ServiceDrop, Requeue: 10 * time.Second}},
		{name: "Releasing, Nova refuses: servers came back, Draining again", phase: releasing, nova: nova{adopted: own, service: disabled, deleteRefused: true},
			asked: []ServiceAction{pods, del},
			want:  ServiceDecision{Phase: draining, Requeue: 10 * time.Second}},
		{name: "Releasing, the deletion fails", phase: releasing, nova: nova{adopted: own, service: disabled, deleteFails: true},
			asked: []ServiceAction{pods, del},
			want:  ServiceDecision{Phase: releasing, Bucket: BucketFailed, Failure: "deleting the service of n1: boom", Requeue: 30 * time.Second}},
		// Rule 7 for a service the pool does not own: never deleted.
		{name: "Releasing, a service never adopted, the pod still runs: waits, reported", phase: releasing, nova: nova{service: up, podRunning: true},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: releasing, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, never adopted)", Requeue: 10 * time.Second}},
		{name: "Releasing, a service never adopted, the pod gone: dropped, the service not deleted", phase: releasing, nova: nova{service: up},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: releasing, Action: ServiceDrop, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, never adopted)"}},
		{name: "Releasing, the recorded id differs, the pod gone: dropped, not deleted", phase: releasing, nova: nova{adopted: "svc-0", service: disabled},
			asked: []ServiceAction{pods},
			want:  ServiceDecision{Phase: releasing, Action: ServiceDrop, Bucket: BucketNotAdopted, Refusal: "n1 (service svc-1, adopted svc-0)"}},
		{name: "Releasing, handed over, never adopted: dropped without a call", phase: releasing, nova: nova{service: up, handover: true},
			want: ServiceDecision{Phase: releasing, Action: ServiceDrop}},
		// Rule 8: a Conflict entry is never acted on.
		{name: "Conflict, registered", phase: conflict, nova: nova{adopted: own, service: up, mapped: true}, want: ServiceDecision{Phase: conflict}},
		{name: "Conflict, not registered", phase: conflict, want: ServiceDecision{Phase: conflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked, got := walk(t, tt.phase, tt.nova)
			if !reflect.DeepEqual(asked, tt.asked) {
				t.Errorf("asked %v, want %v", asked, tt.asked)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decision = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestServiceActionFinal(t *testing.T) {
	for a, final := range map[ServiceAction]bool{
		ServiceKeep: true, ServiceDrop: true, ServiceDiscover: true,
		ServiceCheckMapping: false, ServiceCheckPods: false, ServiceDisable: false, ServiceCountServers: false, ServiceDelete: false,
	} {
		if a.Final() != final {
			t.Errorf("action %d: Final() = %v, want %v", a, a.Final(), final)
		}
	}
}

func TestDecideServicesReady(t *testing.T) {
	res := func(node, phase string, b ServiceBucket, requeue time.Duration) ServiceResult {
		return ServiceResult{Node: node, ServiceDecision: ServiceDecision{Phase: phase, Bucket: b, Requeue: requeue}}
	}
	activeUp := func(node string) ServiceResult { return res(node, novav1alpha1.NodeActive, BucketNone, 0) }
	down := func(node string) ServiceResult { return res(node, novav1alpha1.NodeActive, BucketDown, 0) }
	noService := func(node string) ServiceResult {
		return res(node, novav1alpha1.NodePending, BucketNoService, nodeWaitRequeue)
	}
	unmapped := func(node string) ServiceResult {
		r := res(node, novav1alpha1.NodePending, BucketUnmapped, shortRequeue)
		r.Action = ServiceDiscover
		return r
	}
	drain := func(node string, n int32) ServiceResult {
		r := res(node, novav1alpha1.NodeDraining, BucketDraining, nodeWaitRequeue)
		r.Instances = &n
		return r
	}
	failed := func(node, what string) ServiceResult {
		r := res(node, novav1alpha1.NodeDraining, BucketFailed, apiErrorRequeue)
		r.Failure = what
		return r
	}
	notAdopted := func(node, phase, refusal string, requeue time.Duration) ServiceResult {
		r := res(node, phase, BucketNotAdopted, requeue)
		r.Refusal = refusal
		return r
	}
	releasing := res("r1", novav1alpha1.NodeReleasing, BucketNone, shortRequeue)
	conflict := res("c1", novav1alpha1.NodeConflict, BucketNone, 0)
	jobRunning := Discovery{State: "Job nova-discover-hosts running"}
	jobReplaced := Discovery{State: "Job nova-discover-hosts succeeded, starting again", Replaced: true}
	noJob := Discovery{Err: errors.New("host discovery needs the Nova's apiDatabase")}

	tests := []struct {
		name      string
		results   []ServiceResult
		discovery Discovery
		status    metav1.ConditionStatus
		reason    string
		message   string
		requeue   time.Duration
	}{
		{name: "no node", status: metav1.ConditionTrue, reason: novav1alpha1.ServicesUpReason,
			message: "0 service(s) up and mapped"},
		{name: "every service up; Conflict entries are not counted", results: []ServiceResult{activeUp("b"), activeUp("a"), conflict},
			status: metav1.ConditionTrue, reason: novav1alpha1.ServicesUpReason, message: "2 service(s) up and mapped"},
		{name: "a releasing node asks for 10 s and still leaves the pool up", results: []ServiceResult{activeUp("a"), releasing},
			status: metav1.ConditionTrue, reason: novav1alpha1.ServicesUpReason, message: "1 service(s) up and mapped", requeue: 10 * time.Second},
		{name: "draining nodes, sorted, with their servers", results: []ServiceResult{drain("n2", 1), activeUp("a"), drain("n1", 4)},
			status: metav1.ConditionTrue, reason: novav1alpha1.DrainingReason,
			message: "draining, waiting for their servers to go: n1 (4 instance(s)), n2 (1 instance(s))", requeue: 30 * time.Second},
		{name: "down wins over draining", results: []ServiceResult{drain("n1", 4), down("b"), down("a")},
			status: metav1.ConditionFalse, reason: novav1alpha1.ServicesDownReason, message: "nova-compute services down: a, b", requeue: 30 * time.Second},
		{name: "down alone asks for no earlier pass than the resync", results: []ServiceResult{down("a"), activeUp("b")},
			status: metav1.ConditionFalse, reason: novav1alpha1.ServicesDownReason, message: "nova-compute services down: a"},
		{name: "services not adopted, sorted, win over down", results: []ServiceResult{down("a"),
			notAdopted("c", novav1alpha1.NodeReleasing, "c (service s3, never adopted)", time.Second),
			notAdopted("b", novav1alpha1.NodeActive, "b (service s2, adopted s1)", 0)},
			status: metav1.ConditionFalse, reason: novav1alpha1.ServiceNotAdoptedReason,
			message: "services of these nodes' host names are not the pool's own; it never disables or deletes them: b (service s2, adopted s1), c (service s3, never adopted)",
			requeue: time.Second},
		{name: "no service wins over not adopted", results: []ServiceResult{notAdopted("b", novav1alpha1.NodeActive, "b (service s2, adopted s1)", 0), noService("c")},
			status: metav1.ConditionFalse, reason: novav1alpha1.WaitingForServicesReason,
			message: "no nova-compute service registered yet for: c", requeue: 30 * time.Second},
		{name: "no service wins over down", results: []ServiceResult{down("a"), noService("c"), noService("b")},
			status: metav1.ConditionFalse, reason: novav1alpha1.WaitingForServicesReason,
			message: "no nova-compute service registered yet for: b, c", requeue: 30 * time.Second},
		{name: "unmapped wins over no service, with the Job's state", results: []ServiceResult{noService("b"), unmapped("c"), unmapped("a")}, discovery: jobRunning,
			status: metav1.ConditionFalse, reason: novav1alpha1.WaitingForHostMappingReason,
			message: "hosts not mapped into a cell yet: a, c; host discovery: Job nova-discover-hosts running", requeue: 10 * time.Second},
		{name: "a replaced Job asks for the pass that starts the next at once", results: []ServiceResult{unmapped("a"), noService("b")}, discovery: jobReplaced,
			status: metav1.ConditionFalse, reason: novav1alpha1.WaitingForHostMappingReason,
			message: "hosts not mapped into a cell yet: a; host discovery: Job nova-discover-hosts succeeded, starting again", requeue: time.Second},
		{name: "a replaced Job is not read once every host is mapped", results: []ServiceResult{activeUp("a")}, discovery: jobReplaced,
			status: metav1.ConditionTrue, reason: novav1alpha1.ServicesUpReason, message: "1 service(s) up and mapped"},
		{name: "discovery that cannot run", results: []ServiceResult{unmapped("a"), activeUp("b")}, discovery: noJob,
			status: metav1.ConditionFalse, reason: novav1alpha1.HostDiscoveryErrorReason, message: noJob.Err.Error(), requeue: 10 * time.Second},
		{name: "a discovery error without an unmapped host is not read", results: []ServiceResult{activeUp("b")}, discovery: noJob,
			status: metav1.ConditionTrue, reason: novav1alpha1.ServicesUpReason, message: "1 service(s) up and mapped"},
		{name: "failed calls, sorted, retried in 30 s", results: []ServiceResult{failed("b", "disabling the service of b: boom"), drain("n1", 2), failed("a", "counting the servers on a: boom")},
			status: metav1.ConditionFalse, reason: novav1alpha1.ComputeAPIErrorReason,
			message: "counting the servers on a: boom; disabling the service of b: boom", requeue: 30 * time.Second},
		{name: "failed calls win over unmapped hosts once discovery ran", results: []ServiceResult{unmapped("a"), failed("b", "deleting the service of b: boom")}, discovery: jobRunning,
			status: metav1.ConditionFalse, reason: novav1alpha1.ComputeAPIErrorReason, message: "deleting the service of b: boom", requeue: 10 * time.Second},
		{name: "discovery that cannot run wins over failed calls", results: []ServiceResult{failed("b", "deleting the service of b: boom"), unmapped("a")}, discovery: noJob,
			status: metav1.ConditionFalse, reason: novav1alpha1.HostDiscoveryErrorReason, message: noJob.Err.Error(), requeue: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideServicesReady(tt.results, tt.discovery)
			want := ServicesReport{Status: tt.status, Reason: tt.reason, Message: tt.message, Outcome: flow.Requeue(tt.requeue)}
			if got != want {
				t.Errorf("report = %+v,\n want %+v", got, want)
			}
		})
	}
}

func TestDisableObserved(t *testing.T) {
	const ours = novav1alpha1.DisabledReasonPrefix + "openstack/pool-a"
	entry := func(phase, status string) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: "node-1", Phase: phase, ServiceStatus: status}
	}
	svc := func(status, reason string) openstack.ComputeService {
		return openstack.ComputeService{ID: "s1", Host: "node-1", Status: status, DisabledReason: reason}
	}
	cases := []struct {
		name string
		prev novav1alpha1.NovaComputeNode
		svc  openstack.ComputeService
		want bool
	}{
		{"a lost reply: the last pass saw it enabled, Nova has our disable", entry(novav1alpha1.NodeDraining, "enabled"), svc("disabled", ours), true},
		{"already recorded as disabled: the event went out", entry(novav1alpha1.NodeDraining, "disabled"), svc("disabled", ours), false},
		{"still enabled", entry(novav1alpha1.NodeDraining, "enabled"), svc("enabled", ""), false},
		{"someone else disabled it", entry(novav1alpha1.NodeDraining, "enabled"), svc("disabled", "maintenance"), false},
		{"another pool's reason", entry(novav1alpha1.NodeDraining, "enabled"), svc("disabled", novav1alpha1.DisabledReasonPrefix+"openstack/pool-b"), false},
		{"an active node disabled by hand with a look-alike reason", entry(novav1alpha1.NodeActive, "enabled"), svc("disabled", ours), false},
		{"a node without a recorded service", entry(novav1alpha1.NodeDraining, ""), svc("disabled", ours), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DisableObserved(tc.prev, tc.svc, ours); got != tc.want {
				t.Errorf("DisableObserved = %v, want %v", got, tc.want)
			}
		})
	}
}
