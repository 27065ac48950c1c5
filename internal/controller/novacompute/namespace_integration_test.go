package novacompute_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/anvil/anvil/internal/dev/kstatustest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// A pool in a namespace without the privileged-pools opt-in is refused by
// admission; with the webhook taken out it reaches the controller, which
// stops it before reading its Nova or writing anything. Labelling the
// namespace lets the next pass go on, without a change to the pool.
func TestIntegrationPoolNamespaceWithoutOptIn(t *testing.T) {
	e := startStack(t)
	ctx := t.Context()
	c := e.Management.Client
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-x-" + run}}
	if err := c.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "optin", Namespace: team.Name}}
	pool.Spec.NovaRef.Name = "absent-nova"
	pool.Spec.NodeSelector = map[string]string{poolKey: "optin"}
	pool.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.1"}
	pool.Spec.Libvirt.VirtType = "kvm"

	err := c.Create(ctx, pool.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), "metadata.namespace") || !strings.Contains(err.Error(), team.Name) {
		t.Fatalf("admission of a pool in %s: %v", team.Name, err)
	}
	restore := e.Management.WithoutWebhook(t, "vnovacompute.openstack.c5c3.io")
	if err := c.Create(ctx, pool); err != nil {
		t.Fatalf("without the webhook: %v", err)
	}
	restore()
	t.Cleanup(func() { _ = c.Delete(context.Background(), pool) })

	eventually(t, time.Minute, "DaemonSetReady=NamespaceNotOptedIn", func(ctx context.Context) (bool, string) {
		p := &novav1alpha1.NovaCompute{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), p); err != nil {
			return false, err.Error()
		}
		cond, msg := conditionOf(p, novav1alpha1.DaemonSetReadyCondition)
		return cond != nil && cond.Reason == novav1alpha1.NamespaceNotOptedInReason &&
			strings.Contains(cond.Message, team.Name) && strings.Contains(cond.Message, novav1alpha1.PrivilegedPoolsLabel), msg
	})
	// Only an administrator can end this wait: GitOps tools read it
	// Failed, and the condition gauge says Stalled.
	kstatustest.Await(t, c, pool.DeepCopy(), status.FailedStatus)
	if v, ok := conditionGauge(t, team.Name, pool.Name, anvilmeta.StalledCondition, "True"); !ok || v != 1 {
		t.Errorf("anvil_object_condition Stalled=True reads %v (found %v), want 1", v, ok)
	}
	p := &novav1alpha1.NovaCompute{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pool), p); err != nil {
		t.Fatal(err)
	}
	if cond, msg := conditionOf(p, novav1alpha1.NovaReadyCondition); cond != nil {
		t.Errorf("the pass went on past the policy: %s", msg)
	}
	for _, list := range []client.ObjectList{&appsv1.DaemonSetList{}, &corev1.ConfigMapList{}} {
		if err := c.List(ctx, list, client.InNamespace(team.Name), client.MatchingLabels{"app.kubernetes.io/instance": pool.Name}); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(items); n > 0 {
			t.Errorf("%d %T written for a refused pool", n, list)
		}
	}

	patch := client.MergeFrom(team.DeepCopy())
	team.Labels = map[string]string{novav1alpha1.PrivilegedPoolsLabel: "true"}
	if err := c.Patch(ctx, team, patch); err != nil {
		t.Fatal(err)
	}
	// The refusal is retried every resync; the pass then reaches the Nova,
	// which does not exist.
	waitPoolIn(t, team.Name, pool.Name, novav1alpha1.NovaReadyCondition, novav1alpha1.NovaNotFoundReason)
	// A Nova that does not exist yet is a wait (GitOps may apply it
	// later): InProgress, and the Stalled series is gone.
	kstatustest.Await(t, c, pool.DeepCopy(), status.InProgressStatus)
	if v, ok := conditionGauge(t, team.Name, pool.Name, anvilmeta.ReconcilingCondition, "True"); !ok || v != 1 {
		t.Errorf("anvil_object_condition Reconciling=True reads %v (found %v), want 1", v, ok)
	}
	if _, ok := conditionGauge(t, team.Name, pool.Name, anvilmeta.StalledCondition, "True"); ok {
		t.Error("anvil_object_condition still reports Stalled")
	}
	if err := c.Delete(ctx, pool); err != nil {
		t.Fatal(err)
	}
}

// waitPoolIn waits until the condition of the pool in namespace has the
// reason.
func waitPoolIn(t *testing.T, namespace, name, typ, reason string) {
	t.Helper()
	eventually(t, time.Minute, name+" "+typ+"="+reason, func(ctx context.Context) (bool, string) {
		p := &novav1alpha1.NovaCompute{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
			return false, err.Error()
		}
		cond, msg := conditionOf(p, typ)
		return cond != nil && cond.Reason == reason, msg
	})
}

// conditionGauge reads anvil_object_condition of the pool from the
// process's registry, which the operator in this test process feeds.
func conditionGauge(t *testing.T, namespace, name, condType, condStatus string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kind": "NovaCompute", "namespace": namespace, "name": name, "type": condType, "status": condStatus}
	for _, f := range families {
		if f.GetName() != "anvil_object_condition" {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
