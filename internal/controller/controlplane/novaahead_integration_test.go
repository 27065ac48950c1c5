package controlplane_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// consoleIn tells whether a mirror's configuration points the console at
// host.
func consoleIn(host string) func(*corev1.Secret) bool {
	return func(s *corev1.Secret) bool {
		return bytes.Contains(s.Data["nova-compute.conf"], []byte("//"+host+"/"))
	}
}

// setConsole moves the ControlPlane's console proxy hostname.
func setConsole(t *testing.T, name, host string) {
	t.Helper()
	patchControlPlane(t, name, func(cp *c5c3v1alpha1.ControlPlane) {
		cp.Spec.Services.Nova.ConsoleProxy = &c5c3v1alpha1.ConsoleProxySpec{Enabled: true, Hostname: host}
	})
}

// A spec change goes to the mirrors while the Nova's apply is in flight.
// When the Nova refuses the apply, here through an admission policy the
// ControlPlane's rules cannot know, the mirrors get the contract of the
// Nova as it is back in the same pass, NovaReady names the refusal, and
// the ControlPlane does not write the refused change ahead again.
func TestIntegrationRefusedNovaApplyTakesTheMirrorsBack(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	newControlPlane(t, "ahr", true)
	newPool(t, "ahr", "ahr-a", "compute-a")
	setConsole(t, "ahr", "console-1.example.com")
	waitMirror(t, "compute-a", "ahr-nova-compute-config", consoleIn("console-1.example.com"), time.Minute)
	waitNovaReady(t, "ahr", c5c3v1alpha1.NovaReadyReason)

	refuseNovaConsole(t, "ahr-nova", "refused.example.com")
	compute := e.ComputeCluster("compute-a")
	mark, err := compute.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	setConsole(t, "ahr", "refused.example.com")
	cond := waitNovaReady(t, "ahr", c5c3v1alpha1.NovaProjectionRejectedReason)
	if !strings.Contains(cond.Message, "anvil-test-refuse-console") {
		t.Errorf("NovaReady does not name the refusal: %q", cond.Message)
	}
	// Two writes: the change ahead of the apply, and the way back.
	if n := mirrorWrites(t, compute, mark, "ahr-nova-compute-config"); n != 2 {
		t.Errorf("the mirror was written %d times for the refused change, want 2 (ahead and back)", n)
	}
	mirror, err := remoteSecret(t, "compute-a", "ahr-nova-compute-config")
	if err != nil {
		t.Fatal(err)
	}
	if !consoleIn("console-1.example.com")(mirror) {
		t.Error("after the refusal the mirror does not carry the Nova's contract as it is")
	}
	// Nothing more is written for the refused generation: the mirror
	// stays as the refusing pass left it while the ControlPlane is passed
	// again (a label change wakes it without a new generation).
	if mark, err = compute.AuditMark(); err != nil {
		t.Fatal(err)
	}
	patchControlPlane(t, "ahr", func(cp *c5c3v1alpha1.ControlPlane) { cp.Labels = map[string]string{"wake": "1"} })
	time.Sleep(2 * time.Second)
	if n := mirrorWrites(t, compute, mark, "ahr-nova-compute-config"); n != 0 {
		t.Errorf("the refused change was written %d more times", n)
	}

	// The way back: the user picks a name the Nova takes.
	setConsole(t, "ahr", "console-2.example.com")
	waitMirror(t, "compute-a", "ahr-nova-compute-config", consoleIn("console-2.example.com"), time.Minute)
	waitNovaReady(t, "ahr", c5c3v1alpha1.NovaReadyReason)
	_ = e.Management.Client.Delete(ctx, &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "ahr", Namespace: testNamespace}})
	assertNoLeak(t)
}

// A field the ControlPlane stops setting leaves the Nova when no one else
// owns it; when a user applied the same field on the Nova too, the Nova
// keeps it, and the mirrors, written ahead without it, get it back.
func TestIntegrationMirrorsFollowTheAppliedNovaWhenAFieldIsShared(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	newControlPlane(t, "ahs", true)
	newPool(t, "ahs", "ahs-a", "compute-a")
	setConsole(t, "ahs", "shared.example.com")
	waitMirror(t, "compute-a", "ahs-nova-compute-config", consoleIn("shared.example.com"), time.Minute)
	waitNovaReady(t, "ahs", c5c3v1alpha1.NovaReadyReason)

	own := []byte(`{"apiVersion":"nova.openstack.c5c3.io/v1alpha1","kind":"Nova","metadata":{"name":"ahs-nova","namespace":"` + testNamespace +
		`"},"spec":{"consoleProxy":{"enabled":true,"hostname":"shared.example.com"}}}`)
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: "ahs-nova", Namespace: testNamespace}}
	if err := e.Management.Client.Patch(ctx, nova, client.RawPatch(types.ApplyPatchType, own), client.FieldOwner("platform-team"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	patchControlPlane(t, "ahs", func(cp *c5c3v1alpha1.ControlPlane) { cp.Spec.Services.Nova.ConsoleProxy = nil })
	waitNovaReady(t, "ahs", c5c3v1alpha1.NovaReadyReason)
	published := waitLocalSecret(t, "ahs-nova-remote-compute-config", consoleIn("shared.example.com"))
	waitMirror(t, "compute-a", "ahs-nova-compute-config", func(s *corev1.Secret) bool {
		return bytes.Equal(s.Data["nova-compute.conf"], published.Data["nova-compute.conf"])
	}, time.Minute)

	// Without the user's share the field goes, from the Nova and the mirror.
	if err := e.Management.Client.Patch(ctx, nova, client.RawPatch(types.ApplyPatchType, []byte(`{"apiVersion":"nova.openstack.c5c3.io/v1alpha1","kind":"Nova","metadata":{"name":"ahs-nova","namespace":"`+testNamespace+`"}}`)),
		client.FieldOwner("platform-team"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	waitMirror(t, "compute-a", "ahs-nova-compute-config", func(s *corev1.Secret) bool { return !consoleIn("shared.example.com")(s) }, time.Minute)
	_ = e.Management.Client.Delete(ctx, &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "ahs", Namespace: testNamespace}})
	assertNoLeak(t)
}

// mirrorWrites counts the operator's writes to the named Secret on a
// compute cluster since mark.
func mirrorWrites(t *testing.T, c *testenv.Cluster, mark int64, name string) int {
	t.Helper()
	writes, _, err := c.AuditWrites(mark)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range writes {
		if w.ByOperator() && w.Name == name && w.Code < 300 {
			n++
		}
	}
	return n
}

// refuseNovaConsole makes the management apiserver refuse an update of
// the named Nova that sets its console proxy hostname to host, with an
// admission policy named anvil-test-refuse-console, and removes it when the
// test ends. It returns once the policy refuses a dry run.
func refuseNovaConsole(t *testing.T, nova, host string) {
	t.Helper()
	ctx := context.Background()
	c := env.Management.Client
	name := "anvil-test-refuse-console"
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{nova},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{novav1alpha1.GroupVersion.Group},
						APIVersions: []string{"*"}, Resources: []string{"novas"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf(`!has(object.spec.consoleProxy) || !has(object.spec.consoleProxy.hostname) || object.spec.consoleProxy.hostname != %q`, host),
				Message:    name + " refuses this console hostname",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.Delete(ctx, binding)
		_ = c.Delete(ctx, policy)
	})
	probe := []byte(fmt.Sprintf(`{"spec":{"consoleProxy":{"enabled":true,"hostname":%q}}}`, host))
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: nova, Namespace: testNamespace}}
		err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, probe), client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatal("the admission policy never refused the console hostname")
	}
}
