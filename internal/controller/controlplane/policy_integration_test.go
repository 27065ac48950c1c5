package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// novaComputeWebhook is the name of the NovaCompute admission webhook.
const novaComputeWebhook = "vnovacompute.openstack.c5c3.io"

// policyCP is the ControlPlane whose Nova the policy test's pools join.
const policyCP = "pol"

// A pool whose image is not allowed, that tolerates control-plane nodes,
// or that tolerates every NoExecute taint with a keyless Exists, is refused
// by admission; with the webhook taken out it reaches the controller, which
// refuses it again and writes no DaemonSet.
func TestIntegrationPoolPolicyWithoutTheWebhook(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	newControlPlane(t, policyCP, false)
	waitNovaReady(t, policyCP, c5c3v1alpha1.NovaReadyReason)
	badImage := func(p *novav1alpha1.NovaCompute) {
		p.Spec.Image = &anvilmeta.ImageSpec{Repository: "evil.example.com/nova-compute", Tag: "1"}
	}
	tolerating := func(tol corev1.Toleration) func(*novav1alpha1.NovaCompute) {
		return func(p *novav1alpha1.NovaCompute) {
			// An image of its own: without one the pool waits for the Nova's
			// installed release, which this suite's Nova never reports.
			p.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.1"}
			p.Spec.Tolerations = []corev1.Toleration{tol}
		}
	}
	controlPlaneNodes := tolerating(corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	// It misses the NoSchedule control-plane taints; it has no key.
	keyless := tolerating(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	refused := []struct {
		field, detail string
		mutate        func(*novav1alpha1.NovaCompute)
	}{
		{"spec.image.repository", "is not allowed", badImage},
		{"spec.tolerations[0]", "control-plane taint", controlPlaneNodes},
		{"spec.tolerations[0]", "operator Exists without a key", keyless},
	}
	for _, r := range refused {
		p := policyPool("pol-refused", r.mutate)
		err := e.Management.Client.Create(ctx, p)
		if err == nil {
			_ = e.Management.Client.Delete(ctx, p)
		}
		if err == nil || !strings.Contains(err.Error(), r.field) || !strings.Contains(err.Error(), r.detail) {
			t.Errorf("admission of a pool breaking %s (%s): %v", r.field, r.detail, err)
		}
	}

	restore := e.Management.WithoutWebhook(t, novaComputeWebhook)
	pools := []*novav1alpha1.NovaCompute{
		policyPool("pol-image", badImage), policyPool("pol-tolerations", controlPlaneNodes), policyPool("pol-keyless", keyless),
	}
	for _, p := range pools {
		if err := e.Management.Client.Create(ctx, p); err != nil {
			restore()
			t.Fatalf("without the webhook, creating %s: %v", p.Name, err)
		}
	}
	restore()
	// The ControlPlane sends no contract for a refused pool: it names them
	// and writes nothing to their cluster.
	var ready *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: policyCP}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		ready = apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.NovaReadyCondition)
		if ready == nil || !strings.Contains(ready.Message, "no contract goes out") {
			return false, nil
		}
		for _, p := range pools {
			if !strings.Contains(ready.Message, p.Name+" (the pool policy refuses it)") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("NovaReady never named the refused pools (last %+v)", ready)
	}
	if _, err := remoteSecret(t, "compute-c", policyCP+"-nova"+novav1alpha1.ComputeConfigSuffix); !apierrors.IsNotFound(err) {
		t.Errorf("the contract went to compute-c for refused pools only (get: %v)", err)
	}
	for _, p := range pools {
		var got *metav1.Condition
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			live := &novav1alpha1.NovaCompute{}
			if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(p), live); err != nil {
				return false, nil //nolint:nilerr // poll again
			}
			got = apimeta.FindStatusCondition(live.Status.Conditions, novav1alpha1.DaemonSetReadyCondition)
			return got != nil && got.Reason == novav1alpha1.RefusedByPolicyReason, nil
		})
		if err != nil {
			t.Errorf("%s: DaemonSetReady never read RefusedByPolicy (last %+v)", p.Name, got)
		}
		// The pool's own package names its DaemonSet; this package may
		// not import it, so any DaemonSet named after the pool counts.
		dsList := &appsv1.DaemonSetList{}
		if err := env.ComputeCluster("compute-c").Client.List(ctx, dsList, client.InNamespace(testNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, ds := range dsList.Items {
			if strings.HasPrefix(ds.Name, p.Name+"-") {
				t.Errorf("%s: DaemonSet %s was written despite the policy", p.Name, ds.Name)
			}
		}
		if err := e.Management.Client.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// policyPool builds a pool of policyCP's Nova on compute-c.
func policyPool(name string, mutate func(*novav1alpha1.NovaCompute)) *novav1alpha1.NovaCompute {
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	p.Spec.NovaRef.Name = policyCP + "-nova"
	p.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/nova-compute-pool": name}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-c"}
	mutate(p)
	return p
}
