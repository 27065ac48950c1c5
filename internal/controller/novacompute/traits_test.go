package novacompute

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/openstack"
)

// trPool is a pool with traits and hostTraits entries.
func trPool(traits []string, hosts ...novav1alpha1.HostTraitsSpec) *novav1alpha1.NovaCompute {
	p := &novav1alpha1.NovaCompute{}
	p.Name = "pool-a"
	p.Spec.Traits = traits
	p.Spec.HostTraits = hosts
	return p
}

func hostTraits(node, mode string, traits ...string) novav1alpha1.HostTraitsSpec {
	return novav1alpha1.HostTraitsSpec{NodeName: node, Mode: mode, Traits: traits}
}

func TestNodeTraits(t *testing.T) {
	poolTraits := []string{"CUSTOM_POOL_B", "CUSTOM_POOL_A"}
	tests := []struct {
		name string
		pool *novav1alpha1.NovaCompute
		node string
		want []string
	}{
		{name: "no traits at all",
			pool: trPool(nil), node: "n1", want: []string{}},
		{name: "a node without an entry gets the pool's traits, sorted",
			pool: trPool(poolTraits), node: "n1", want: []string{"CUSTOM_POOL_A", "CUSTOM_POOL_B"}},
		{name: "mode left out merges the entry with the pool's traits",
			pool: trPool(poolTraits, hostTraits("n1", "", "CUSTOM_GPU")), node: "n1",
			want: []string{"CUSTOM_GPU", "CUSTOM_POOL_A", "CUSTOM_POOL_B"}},
		{name: "mode Merge merges the entry with the pool's traits",
			pool: trPool(poolTraits, hostTraits("n1", novav1alpha1.TraitsModeMerge, "CUSTOM_GPU")), node: "n1",
			want: []string{"CUSTOM_GPU", "CUSTOM_POOL_A", "CUSTOM_POOL_B"}},
		{name: "mode Replace drops the pool's traits",
			pool: trPool(poolTraits, hostTraits("n1", novav1alpha1.TraitsModeReplace, "CUSTOM_Z", "CUSTOM_GPU")), node: "n1",
			want: []string{"CUSTOM_GPU", "CUSTOM_Z"}},
		{name: "mode Replace with no traits leaves none",
			pool: trPool(poolTraits, hostTraits("n1", novav1alpha1.TraitsModeReplace)), node: "n1",
			want: []string{}},
		{name: "a trait both in the pool and the entry appears once",
			pool: trPool(poolTraits, hostTraits("n1", "", "CUSTOM_POOL_A", "CUSTOM_GPU", "CUSTOM_GPU")), node: "n1",
			want: []string{"CUSTOM_GPU", "CUSTOM_POOL_A", "CUSTOM_POOL_B"}},
		{name: "a duplicate in the pool's traits appears once",
			pool: trPool([]string{"CUSTOM_A", "CUSTOM_A"}), node: "n1", want: []string{"CUSTOM_A"}},
		{name: "another node's Replace entry does not affect this node",
			pool: trPool(poolTraits, hostTraits("n2", novav1alpha1.TraitsModeReplace, "CUSTOM_GPU")), node: "n1",
			want: []string{"CUSTOM_POOL_A", "CUSTOM_POOL_B"}},
		{name: "another node's Merge entry does not affect this node",
			pool: trPool(nil, hostTraits("n2", "", "CUSTOM_GPU")), node: "n1", want: []string{}},
		{name: "the node's own entry among others",
			pool: trPool(poolTraits, hostTraits("n0", "", "CUSTOM_X"), hostTraits("n1", novav1alpha1.TraitsModeReplace, "CUSTOM_GPU"), hostTraits("n2", "", "CUSTOM_Y")),
			node: "n1", want: []string{"CUSTOM_GPU"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pool.DeepCopy()
			got := NodeTraits(tt.pool, tt.node)
			if !slices.Equal(got, tt.want) {
				t.Errorf("NodeTraits(%s) = %v, want %v", tt.node, got, tt.want)
			}
			if !slices.Equal(tt.pool.Spec.Traits, before.Spec.Traits) {
				t.Errorf("the pool's traits changed to %v, want %v", tt.pool.Spec.Traits, before.Spec.Traits)
			}
		})
	}
}

func TestAllTraits(t *testing.T) {
	tests := []struct {
		name string
		pool *novav1alpha1.NovaCompute
		want []string
	}{
		{name: "none", pool: trPool(nil), want: []string{}},
		{name: "the pool's traits, sorted", pool: trPool([]string{"CUSTOM_B", "CUSTOM_A"}), want: []string{"CUSTOM_A", "CUSTOM_B"}},
		{name: "every entry's traits, Replace ones too, without duplicates",
			pool: trPool([]string{"CUSTOM_POOL", "CUSTOM_GPU"},
				hostTraits("n1", novav1alpha1.TraitsModeReplace, "CUSTOM_Z", "CUSTOM_GPU"),
				hostTraits("n2", "", "CUSTOM_A", "CUSTOM_Z")),
			want: []string{"CUSTOM_A", "CUSTOM_GPU", "CUSTOM_POOL", "CUSTOM_Z"}},
		{name: "entries only", pool: trPool(nil, hostTraits("n1", "", "CUSTOM_X")), want: []string{"CUSTOM_X"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AllTraits(tt.pool)
			if !slices.Equal(got, tt.want) {
				t.Errorf("AllTraits = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestContainsAll(t *testing.T) {
	tests := []struct {
		name       string
		have, want []string
		ok         bool
	}{
		{name: "nothing wanted", ok: true},
		{name: "all present", have: []string{"A", "B", "C"}, want: []string{"C", "A"}, ok: true},
		{name: "one missing", have: []string{"A"}, want: []string{"A", "B"}},
		{name: "nothing held", want: []string{"A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := containsAll(tt.have, tt.want); got != tt.ok {
				t.Errorf("containsAll(%v, %v) = %v, want %v", tt.have, tt.want, got, tt.ok)
			}
		})
	}
}

func TestInvalidTraitPaths(t *testing.T) {
	long := "CUSTOM_" + strings.Repeat("A", novav1alpha1.MaxTraitLength-len("CUSTOM_"))
	tests := []struct {
		name string
		pool *novav1alpha1.NovaCompute
		want []string
	}{
		{name: "no traits", pool: trPool(nil)},
		{name: "custom traits of every shape Placement takes",
			pool: trPool([]string{"CUSTOM_A", "CUSTOM_POOL_1", long}, hostTraits("n1", "", "CUSTOM_GPU_2"))},
		{name: "a standard trait in the pool's list",
			pool: trPool([]string{"CUSTOM_A", "HW_CPU_X86_AVX2"}), want: []string{"spec.traits[1]"}},
		{name: "lower case, the bare prefix, a space and the empty string",
			pool: trPool([]string{"custom_a", "CUSTOM_", "CUSTOM_A B", ""}),
			want: []string{"spec.traits[0]", "spec.traits[1]", "spec.traits[2]", "spec.traits[3]"}},
		{name: "one character past Placement's limit",
			pool: trPool([]string{long + "A"}), want: []string{"spec.traits[0]"}},
		{name: "a standard trait in a node's entry",
			pool: trPool([]string{"CUSTOM_A"}, hostTraits("n1", "", "CUSTOM_B"), hostTraits("n2", novav1alpha1.TraitsModeReplace, "CUSTOM_C", "COMPUTE_STATUS_DISABLED")),
			want: []string{"spec.hostTraits[1].traits[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InvalidTraitPaths(tt.pool); !slices.Equal(got, tt.want) {
				t.Errorf("InvalidTraitPaths = %q, want %q", got, tt.want)
			}
		})
	}
}

// A pool that got past admission with a standard trait writes nothing: the
// step reports the field on TraitsReady, without the value, before it
// opens the cloud or touches a Hypervisor.
func TestReconcileTraitsRefusesAStandardTrait(t *testing.T) {
	r := &Reconciler{Cloud: func(context.Context, openstack.Credentials) (Cloud, error) {
		t.Fatal("the step opened the cloud for a pool with an invalid trait")
		return nil, nil
	}}
	pool := trPool([]string{"CUSTOM_A"}, hostTraits("n1", "", "HW_CPU_X86_AVX2"))
	p := &pass{r: r, pool: pool}
	out, err := r.reconcileTraits(t.Context(), p)
	if err != nil || out.RequeueAfter != 0 {
		t.Fatalf("reconcileTraits = %+v, %v; want the pass to go on with no requeue of its own", out, err)
	}
	c := findCondition(pool, novav1alpha1.TraitsReadyCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != novav1alpha1.InvalidTraitsReason {
		t.Fatalf("TraitsReady = %+v, want False/%s", c, novav1alpha1.InvalidTraitsReason)
	}
	if !strings.Contains(c.Message, "spec.hostTraits[0].traits[0]") || strings.Contains(c.Message, "HW_CPU") {
		t.Errorf("message %q should name the field and not echo the value", c.Message)
	}
}
