package novacompute

import (
	"reflect"
	"slices"
	"testing"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// lifePass is one Services pass over a node in TestServiceAdoptionLife: the
// node's phase as the Nodes step leaves it (empty: as the last pass left
// it), what Nova and the cluster answer, and what must come of it.
type lifePass struct {
	phase   string
	nova    nova
	want    string // the entry's phase after the pass; "gone" once dropped
	adopted string // the entry's AdoptedServiceID after the pass
	acts    []ServiceAction
}

// TestServiceAdoptionLife plays a node's passes end to end, carrying the
// entry from one pass to the next as the executor writes it, and checks
// that only an adopted service is ever disabled or deleted.
func TestServiceAdoptionLife(t *testing.T) {
	const (
		pending   = novav1alpha1.NodePending
		active    = novav1alpha1.NodeActive
		draining  = novav1alpha1.NodeDraining
		releasing = novav1alpha1.NodeReleasing
	)
	svc := func(id, status string) *openstack.ComputeService {
		return &openstack.ComputeService{ID: id, Host: "n1", Status: status, State: "up"}
	}
	ours, brown, other := svc("ours", "enabled"), svc("brown", "enabled"), svc("other", "enabled")
	var (
		pods    = ServiceCheckPods
		start   = ServiceCheckStart
		check   = ServiceCheckMapping
		disable = ServiceDisable
		count   = ServiceCountServers
		del     = ServiceDelete
	)
	lives := []struct {
		name   string
		passes []lifePass
	}{
		{name: "our nova-compute registers: adopted once, then drained and deleted as before", passes: []lifePass{
			{phase: pending, nova: nova{computeFresh: true}, want: pending, acts: []ServiceAction{start}},
			{nova: nova{service: ours, podRunning: true, computeFresh: true, mapped: true}, want: active, adopted: "ours",
				acts: []ServiceAction{pods, check}},
			// Later passes, the pod long started, keep the adoption and read no pod.
			{nova: nova{service: ours, podRunning: true}, want: active, adopted: "ours"},
			{phase: draining, nova: nova{service: ours, servers: 1}, want: draining, adopted: "ours", acts: []ServiceAction{disable, count}},
			{nova: nova{service: svc("ours", "disabled")}, want: releasing, adopted: "ours", acts: []ServiceAction{count}},
			{nova: nova{service: svc("ours", "disabled")}, want: "gone", acts: []ServiceAction{pods, del}},
		}},
		{name: "a brownfield service of the node's name, no pod of ours: never disabled, never deleted", passes: []lifePass{
			{phase: pending, nova: nova{service: brown, mapped: true}, want: active, acts: []ServiceAction{pods, check}},
			{nova: nova{service: brown}, want: active, acts: []ServiceAction{pods}},
			{phase: draining, nova: nova{service: brown, servers: 4}, want: releasing},
			{nova: nova{service: brown}, want: "gone", acts: []ServiceAction{pods}},
		}},
		{name: "a pool from before adoption: its running node adopted on the first pass, then drained as before", passes: []lifePass{
			{phase: active, nova: nova{service: ours, podRunning: true}, want: active, adopted: "ours", acts: []ServiceAction{pods}},
			{phase: draining, nova: nova{service: ours, servers: 0}, want: releasing, adopted: "ours", acts: []ServiceAction{disable, count}},
		}},
		{name: "another service takes the host name after adoption: refused, the adoption kept", passes: []lifePass{
			{phase: pending, nova: nova{service: ours, podRunning: true, computeFresh: true, mapped: true}, want: active, adopted: "ours",
				acts: []ServiceAction{pods, check}},
			{nova: nova{service: other, podRunning: true, computeFresh: true}, want: active, adopted: "ours"},
			{phase: draining, nova: nova{service: other}, want: releasing, adopted: "ours"},
			{nova: nova{service: other}, want: "gone", acts: []ServiceAction{pods}},
		}},
		{name: "the adopted service is deleted by hand: forgotten, the next one adopted anew", passes: []lifePass{
			{phase: active, nova: nova{service: ours, podRunning: true, computeFresh: true}, want: active, adopted: "ours", acts: []ServiceAction{pods}},
			{nova: nova{}, want: pending, acts: []ServiceAction{start}},
			{nova: nova{service: other, mapped: true}, want: active, acts: []ServiceAction{pods, check}},
			{nova: nova{service: other, podRunning: true}, want: active, adopted: "other", acts: []ServiceAction{pods}},
		}},
	}
	for _, life := range lives {
		t.Run(life.name, func(t *testing.T) {
			e := novav1alpha1.NovaComputeNode{Name: "n1"}
			for i, p := range life.passes {
				if p.phase != "" {
					e.Phase = p.phase
				}
				asked, d, obs := walkEntry(t, e, p.nova)
				if !reflect.DeepEqual(asked, p.acts) {
					t.Fatalf("pass %d: asked %v, want %v", i, asked, p.acts)
				}
				if obs.Service != nil && obs.Service.ID != "ours" && (slices.Contains(asked, ServiceDisable) || slices.Contains(asked, ServiceDelete)) {
					t.Fatalf("pass %d: acted on service %s, which the pool never adopted", i, obs.Service.ID)
				}
				if d.Action == ServiceDrop {
					if p.want != "gone" {
						t.Fatalf("pass %d: dropped, want %s", i, p.want)
					}
					continue
				}
				e.Phase, e.AdoptedServiceID = d.Phase, AdoptedAfter(e, obs, d)
				if e.Phase != p.want || e.AdoptedServiceID != p.adopted {
					t.Fatalf("pass %d: phase %s adopted %q, want %s adopted %q", i, e.Phase, e.AdoptedServiceID, p.want, p.adopted)
				}
			}
		})
	}
}

func TestAdoptedAfter(t *testing.T) {
	listed := &openstack.ComputeService{ID: "s2"}
	cases := []struct {
		name     string
		recorded string
		service  *openstack.ComputeService
		adopt    bool
		want     string
	}{
		{"nothing recorded, not adopted", "", listed, false, ""},
		{"adopted in this pass", "", listed, true, "s2"},
		{"recorded and listed", "s2", listed, false, "s2"},
		{"recorded, another listed: kept, the other is refused", "s1", listed, false, "s1"},
		{"recorded, no service listed any more: forgotten", "s1", nil, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := novav1alpha1.NovaComputeNode{Name: "n1", AdoptedServiceID: tc.recorded}
			if got := AdoptedAfter(e, ServiceObs{Service: tc.service}, ServiceDecision{Adopt: tc.adopt}); got != tc.want {
				t.Errorf("AdoptedAfter = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestServiceOf(t *testing.T) {
	a, b := openstack.ComputeService{ID: "a", Host: "n1"}, openstack.ComputeService{ID: "b", Host: "n1"}
	cases := []struct {
		name    string
		svcs    []openstack.ComputeService
		adopted string
		want    string // "" for none
	}{
		{"none listed", nil, "a", ""},
		{"one listed, not adopted", []openstack.ComputeService{b}, "", "b"},
		{"one listed, another adopted", []openstack.ComputeService{b}, "a", "b"},
		{"two cells share the name: the adopted one", []openstack.ComputeService{a, b}, "b", "b"},
		{"two cells share the name, neither adopted: the lowest id, whatever the order", []openstack.ComputeService{b, a}, "", "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ServiceOf(tc.svcs, tc.adopted)
			if ok != (tc.want != "") || got.ID != tc.want {
				t.Errorf("ServiceOf = %+v, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
