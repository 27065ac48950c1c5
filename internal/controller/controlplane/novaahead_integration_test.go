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

// withConsole makes a ControlPlane with a pool on compute-a and a console
// proxy at host, and waits until the mirror carries it and NovaReady is
// True.
func withConsole(t *testing.T, name, host string) {
	t.Helper()
	newControlPlane(t, name, true)
	newPool(t, name, name+"-a", "compute-a")
	setConsole(t, name, host)
	waitMirror(t, "compute-a", name+"-nova-compute-config", consoleIn(host), time.Minute)
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
}

// A spec change goes to the mirrors while the Nova's apply is in flight.
// When the Nova refuses the apply, here through an admission policy the
// ControlPlane's rules cannot know, the mirrors get the contract of the
// Nova as it is back in the same pass, NovaReady names the refusal, and
// the ControlPlane does not write the refused change ahead again.
func TestIntegrationRefusedNovaApplyTakesTheMirrorsBack(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	withConsole(t, "ahr", "console-1.example.com")

	refuseNovaConsole(t, "ahr-nova", "refused.example.com")
	compute := e.ComputeCluster("compute-a")
	mark, err := compute.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	setConsole(t, "ahr", "refused.example.com")
	cond := waitNovaReady(t, "ahr", c5c3v1alpha1.NovaProjectionRejectedReason)
	if !strings.Contains(cond.Message, refusalPolicy) {
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
	withConsole(t, "ahs", "shared.example.com")

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

// A new remote bus URL goes to the mirrors without waiting for the Nova's
// copy of the Secret: here the management apiserver refuses that copy's
// update, and the mirror carries the new URL all the same, while NovaReady
// names the refusal. Once the refusal is lifted the copy follows.
func TestIntegrationRemoteBusReachesTheMirrorsBesideTheNovasCopy(t *testing.T) {
	startOperator(t)
	newControlPlane(t, "ahb", true)
	newPool(t, "ahb", "ahb-a", "compute-a")
	waitNovaReady(t, "ahb", c5c3v1alpha1.NovaReadyReason)
	transport := func(url string) func(*corev1.Secret) bool {
		return func(s *corev1.Secret) bool { return string(s.Data["transport_url"]) == url }
	}
	waitMirror(t, "compute-a", "ahb-nova-compute-config", transport(remoteBusURL), time.Minute)

	copyName := "ahb" + c5c3v1alpha1.NovaRemoteMessagingSuffix
	refuseUpdates(t, "", "secrets", copyName, "false")
	waitRefused(t, func(ctx context.Context) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: copyName, Namespace: testNamespace}}
		return env.Management.Client.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`)), client.DryRunAll)
	})
	const movedURL = "rabbit://nova:remote-PASSWORD-moved-e5@rabbit-2.example.com:5671/nova"
	putSecret(t, "ahb-remote-transport", map[string]string{"transport_url": movedURL})
	waitMirror(t, "compute-a", "ahb-nova-compute-config", transport(movedURL), time.Minute)
	cond := waitNovaReady(t, "ahb", c5c3v1alpha1.NovaRemoteMessagingErrorReason)
	if !strings.Contains(cond.Message, refusalPolicy) {
		t.Errorf("NovaReady does not name the refusal: %q", cond.Message)
	}
	if !transport(remoteBusURL)(localSecret(t, copyName)) {
		t.Error("the Nova's copy changed although its update was refused")
	}

	liftRefusal(t)
	waitLocalSecret(t, copyName, transport(movedURL))
	waitNovaReady(t, "ahb", c5c3v1alpha1.NovaReadyReason)
	assertNoLeak(t)
}

// mirrorWrites counts the operator's writes to the named Secret on a
// compute cluster since mark, and logs them (verb, time and status only).
func mirrorWrites(t *testing.T, c *testenv.Cluster, mark int64, name string) int {
	t.Helper()
	writes, _, err := c.AuditWrites(mark)
	if err != nil {
		t.Fatal(err)
	}
	var mine []testenv.AuditEvent
	for _, w := range writes {
		if w.ByOperator() && w.Name == name && w.Code < 300 {
			mine = append(mine, w)
		}
	}
	if len(mine) > 0 {
		t.Logf("writes of %s:\n%s", name, testenv.FormatAuditEvents(mine))
	}
	return len(mine)
}

// refuseNovaConsole makes the management apiserver refuse an update of
// the named Nova that sets its console proxy hostname to host, and returns
// once it does.
func refuseNovaConsole(t *testing.T, nova, host string) {
	t.Helper()
	refuseUpdates(t, novav1alpha1.GroupVersion.Group, "novas", nova,
		fmt.Sprintf(`!has(object.spec.consoleProxy) || !has(object.spec.consoleProxy.hostname) || object.spec.consoleProxy.hostname != %q`, host))
	probe := []byte(fmt.Sprintf(`{"spec":{"consoleProxy":{"enabled":true,"hostname":%q}}}`, host))
	waitRefused(t, func(ctx context.Context) error {
		n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: nova, Namespace: testNamespace}}
		return env.Management.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, probe), client.DryRunAll)
	})
}

// refusalPolicy names the admission policy refuseUpdates installs.
const refusalPolicy = "anvil-test-refusal"

// refuseUpdates makes the management apiserver refuse every update of the
// named object of group and resource in the test namespace for which
// expression is false, through a ValidatingAdmissionPolicy named
// refusalPolicy, the cluster's own rule that no Anvil code knows of. It is
// removed when the test ends.
func refuseUpdates(t *testing.T, group, resource, name, expression string) {
	t.Helper()
	ctx := context.Background()
	c := env.Management.Client
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: refusalPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{name},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: refusalPolicy + " refuses this update"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: refusalPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: refusalPolicy,
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { liftRefusal(t) })
}

// liftRefusal removes refuseUpdates' policy and waits until it is gone.
func liftRefusal(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := env.Management.Client
	_ = c.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: refusalPolicy}})
	_ = c.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: refusalPolicy}})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: refusalPolicy}, &admissionregistrationv1.ValidatingAdmissionPolicy{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("the admission policy was never removed")
	}
}

// waitRefused waits until write, a dry run, is refused.
func waitRefused(t *testing.T, write func(context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := write(ctx)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatal("the admission policy never refused the dry run")
	}
}
