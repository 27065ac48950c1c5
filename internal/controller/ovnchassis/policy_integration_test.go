package ovnchassis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/anvil/anvil/internal/dev/kstatustest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// ovnChassisWebhook is the name of the chassis's admission webhook.
const ovnChassisWebhook = "vovnchassis.openstack.c5c3.io"

// The review's story past admission: with the webhook taken out, a chassis
// from a foreign image that tolerates every taint, in a namespace that has
// not opted in, is stored. The controller refuses it on OVSReady, first
// for its spec and, once that is fixed, for its namespace, and writes
// nothing meanwhile; labelling the namespace lets the pass go on, here to
// the central it names, without touching the chassis.
func TestIntegrationChassisPolicyWithoutTheWebhook(t *testing.T) {
	e := startStack(t)
	ctx := context.Background()
	c := e.Management.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "chassis-policy"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })

	restore := e.Management.WithoutWebhook(t, ovnChassisWebhook)
	ch := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "evil", Namespace: ns.Name}}
	ch.Spec.CentralRef.Name = "no-central"
	ch.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
	ch.Spec.Image = &anvilmeta.ImageSpec{Repository: "registry.invalid/evil/ovn", Tag: "1"}
	ch.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	err := c.Create(ctx, ch)
	restore()
	if err != nil {
		t.Fatalf("without the webhook, creating the chassis: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ch) })
	key := client.ObjectKeyFromObject(ch)

	got := waitChassisAt(t, key, ovnv1alpha1.OVSReadyCondition, anvilmeta.RefusedByPolicyReason, 30*time.Second)
	// A refused spec is input no retry fixes: GitOps tools read it Failed.
	kstatustest.Await(t, c, &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: ch.Name, Namespace: ns.Name}}, status.FailedStatus)
	msg := conditionMessage(got.Status.Conditions, ovnv1alpha1.OVSReadyCondition)
	for _, want := range []string{"spec.image.repository", "spec.tolerations[0]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("OVSReady message %q does not name %s", msg, want)
		}
	}

	// Fixed past admission again, the spec passes and the namespace is
	// what holds the chassis.
	restore = e.Management.WithoutWebhook(t, ovnChassisWebhook)
	got.Spec.Image, got.Spec.Tolerations = nil, nil
	err = c.Update(ctx, got)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	waitChassisAt(t, key, ovnv1alpha1.OVSReadyCondition, anvilmeta.NamespaceNotOptedInReason, 30*time.Second)
	assertNothingWritten(t, e.Management.Client, ns.Name)

	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels = map[string]string{anvilmeta.PrivilegedNamespaceLabel: "true"}
	if err := c.Patch(ctx, ns, patch); err != nil {
		t.Fatal(err)
	}
	waitChassisAt(t, key, ovnv1alpha1.CentralReadyCondition, ovnv1alpha1.CentralNotFoundReason, time.Minute)
}

// assertNothingWritten fails if a DaemonSet or a ConfigMap other than the
// apiserver's own exists in namespace.
func assertNothingWritten(t *testing.T, c client.Client, namespace string) {
	t.Helper()
	ds := &appsv1.DaemonSetList{}
	cms := &corev1.ConfigMapList{}
	for _, l := range []client.ObjectList{ds, cms} {
		if err := c.List(context.Background(), l, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
	}
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			t.Errorf("ConfigMap %s was written for a refused chassis", cm.Name)
		}
	}
	if len(ds.Items) > 0 {
		t.Errorf("%d DaemonSets were written for a refused chassis", len(ds.Items))
	}
}
