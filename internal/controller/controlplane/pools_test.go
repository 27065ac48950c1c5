package controlplane

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// TestRunnablePools: a pool earns its cluster the contract only when the
// pool controller would run it; a deleting pool always stays in the list.
func TestRunnablePools(t *testing.T) {
	pool := func(name string, change func(*novav1alpha1.NovaCompute)) novav1alpha1.NovaCompute {
		p := novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
		if change != nil {
			change(&p)
		}
		return p
	}
	badImage := func(p *novav1alpha1.NovaCompute) {
		p.Spec.Image = &anvilmeta.ImageSpec{Repository: "evil.example.com/nova-compute", Tag: "1"}
	}
	keyless := func(p *novav1alpha1.NovaCompute) {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	deleting := func(p *novav1alpha1.NovaCompute) {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		badImage(p)
	}
	for name, tc := range map[string]struct {
		pools        []novav1alpha1.NovaCompute
		optedIn      bool
		wantRunnable []string
		wantWithheld []string
	}{
		"none":                      {optedIn: true},
		"default image":             {pools: []novav1alpha1.NovaCompute{pool("a", nil)}, optedIn: true, wantRunnable: []string{"a"}},
		"image outside allowlist":   {pools: []novav1alpha1.NovaCompute{pool("a", nil), pool("b", badImage)}, optedIn: true, wantRunnable: []string{"a"}, wantWithheld: []string{"b"}},
		"keyless toleration":        {pools: []novav1alpha1.NovaCompute{pool("a", keyless)}, optedIn: true, wantWithheld: []string{"a"}},
		"namespace not opted in":    {pools: []novav1alpha1.NovaCompute{pool("a", nil), pool("b", nil)}, wantWithheld: []string{"a", "b"}},
		"deleting pool stays":       {pools: []novav1alpha1.NovaCompute{pool("a", deleting)}, wantRunnable: []string{"a"}},
		"deleting among refused ns": {pools: []novav1alpha1.NovaCompute{pool("a", deleting), pool("b", nil)}, wantRunnable: []string{"a"}, wantWithheld: []string{"b"}},
	} {
		t.Run(name, func(t *testing.T) {
			runnable, withheld := RunnablePools(tc.pools, workloadpolicy.Policy{}, tc.optedIn)
			var gotRunnable, gotWithheld []string
			for _, p := range runnable {
				gotRunnable = append(gotRunnable, p.Name)
			}
			for _, w := range withheld {
				if w.Why == "" {
					t.Errorf("pool %s withheld without a reason", w.Pool)
				}
				gotWithheld = append(gotWithheld, w.Pool)
			}
			if !slices.Equal(gotRunnable, tc.wantRunnable) || !slices.Equal(gotWithheld, tc.wantWithheld) {
				t.Errorf("runnable %v withheld %v, want %v and %v", gotRunnable, gotWithheld, tc.wantRunnable, tc.wantWithheld)
			}
		})
	}
}
