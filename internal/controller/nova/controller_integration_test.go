package nova_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/anvil/anvil/internal/dev/kstatustest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func keys(s *corev1.Secret) string {
	var k []string
	for key := range s.Data {
		k = append(k, key)
	}
	sort.Strings(k)
	return strings.Join(k, ",")
}

// Both contracts are published with the keys, labels, owner and status
// references of the spec, and a rotated password rewrites both in place.
func TestIntegrationPublishesBothContractsAndRotatesInPlace(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "rot")
	if err := e.Management.Client.Create(ctx, newNova("rot")); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "rot", novav1alpha1.ComputeConfigPublishedReason)

	n := getNova(t, "rot")
	if n.Status.ComputeConfigSecretRef == nil || n.Status.ComputeConfigSecretRef.Name != "rot-compute-config" ||
		n.Status.RemoteComputeConfigSecretRef == nil || n.Status.RemoteComputeConfigSecretRef.Name != "rot-remote-compute-config" {
		t.Fatalf("status references = %+v, %+v", n.Status.ComputeConfigSecretRef, n.Status.RemoteComputeConfigSecretRef)
	}
	local, err := getSecret(t, "rot-compute-config")
	if err != nil {
		t.Fatal(err)
	}
	remote, err := getSecret(t, "rot-remote-compute-config")
	if err != nil {
		t.Fatal(err)
	}
	const want = "ca.crt,cell_name,metadata_proxy_shared_secret,nova-compute.conf,password,transport_url"
	for _, s := range []*corev1.Secret{local, remote} {
		if got := keys(s); got != want {
			t.Errorf("%s keys = %s, want %s", s.Name, got, want)
		}
		if s.Labels[novav1alpha1.ComponentLabel] != novav1alpha1.ComputeConfigComponent {
			t.Errorf("%s labels = %v", s.Name, s.Labels)
		}
		if ref := metav1.GetControllerOf(s); ref == nil || ref.Kind != "Nova" || ref.Name != "rot" {
			t.Errorf("%s is not controlled by the Nova: %v", s.Name, s.OwnerReferences)
		}
		if string(s.Data["password"]) != servicePass || string(s.Data["cell_name"]) != "cell1" || string(s.Data["ca.crt"]) != caBundle {
			t.Errorf("%s carries the wrong values", s.Name)
		}
	}
	if string(local.Data["transport_url"]) != busURL || string(remote.Data["transport_url"]) != remoteBusURL {
		t.Error("the transport URLs are not the in-cluster and the handed-over ones")
	}
	if !strings.Contains(string(remote.Data["nova-compute.conf"]), "auth_url = https://keystone.example.com") {
		t.Error("the remote fragment does not authenticate against the public Keystone")
	}

	// Rotate the service password: both contracts follow within 2 s, under
	// the same names, updated in place.
	start := time.Now()
	putSecret(t, "rot-password", map[string]string{"password": rotatedPass})
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
		l, err1 := getSecret(t, "rot-compute-config")
		r, err2 := getSecret(t, "rot-remote-compute-config")
		return err1 == nil && err2 == nil && string(l.Data["password"]) == rotatedPass && string(r.Data["password"]) == rotatedPass, nil
	})
	if err != nil {
		t.Fatal("a rotated password did not reach both contracts within 2s")
	}
	t.Logf("both contracts carried the rotated password after %s", time.Since(start).Round(time.Millisecond))
	l, _ := getSecret(t, "rot-compute-config")
	r, _ := getSecret(t, "rot-remote-compute-config")
	if l.UID != local.UID || r.UID != remote.UID || l.ResourceVersion == local.ResourceVersion {
		t.Error("the contracts were recreated instead of updated in place")
	}
	assertNoLeak(t)
}

// Dropping TLS removes ca.crt in place; removing remoteCompute deletes the
// remote contract and clears its reference.
func TestIntegrationDroppingTLSAndRemoteCompute(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "drop")
	if err := e.Management.Client.Create(ctx, newNova("drop")); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "drop", novav1alpha1.ComputeConfigPublishedReason)
	before, _ := getSecret(t, "drop-compute-config")

	n := getNova(t, "drop")
	n.Spec.RemoteCompute = nil
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "drop", novav1alpha1.ComputeConfigPublishedReason)
	if _, err := getSecret(t, "drop-remote-compute-config"); !apierrors.IsNotFound(err) {
		t.Errorf("the remote contract survived removing remoteCompute: %v", err)
	}
	if n := getNova(t, "drop"); n.Status.RemoteComputeConfigSecretRef != nil {
		t.Errorf("the remote reference was not cleared: %+v", n.Status.RemoteComputeConfigSecretRef)
	}

	n = getNova(t, "drop")
	n.Spec.Messaging.TLS = nil
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		s, err := getSecret(t, "drop-compute-config")
		return err == nil && s.Data["ca.crt"] == nil, nil
	})
	if err != nil {
		t.Fatal("ca.crt did not disappear when TLS was dropped")
	}
	after, _ := getSecret(t, "drop-compute-config")
	if after.UID != before.UID {
		t.Error("the contract was recreated instead of updated in place")
	}
	if strings.Contains(string(after.Data["nova-compute.conf"]), "ssl_ca_file") {
		t.Error("the fragment still points at a CA bundle")
	}
}

// Withdrawing remoteCompute withdraws the remote contract at once, even
// while an unrelated input keeps the in-cluster contract from rendering:
// taking a credential away must never wait on a fix of something else.
func TestIntegrationWithdrawingRemoteComputeDoesNotWaitOnABadInput(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "withdraw")
	if err := e.Management.Client.Create(ctx, newNova("withdraw")); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "withdraw", novav1alpha1.ComputeConfigPublishedReason)
	putSecret(t, "withdraw-password", map[string]string{"password": "bad\npassword"})
	waitCondition(t, "withdraw", novav1alpha1.ComputeConfigErrorReason)
	// A malformed password is input no retry fixes: GitOps tools read it Failed.
	kstatustest.Await(t, e.Management.Client, getNova(t, "withdraw"), status.FailedStatus)

	n := getNova(t, "withdraw")
	n.Spec.RemoteCompute = nil
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := getSecret(t, "withdraw-remote-compute-config")
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("the remote contract stayed while the service password was invalid")
	}
	if c := waitCondition(t, "withdraw", novav1alpha1.ComputeConfigErrorReason); c.ObservedGeneration != getNova(t, "withdraw").Generation {
		t.Errorf("ComputeConfigReady describes generation %d", c.ObservedGeneration)
	}
	if n := getNova(t, "withdraw"); n.Status.RemoteComputeConfigSecretRef != nil {
		t.Errorf("the remote reference was not cleared: %+v", n.Status.RemoteComputeConfigSecretRef)
	}
}

// A missing hand-over waits without halting and keeps the last remote
// contract; a non-rabbit URL is an error that names only the scheme.
func TestIntegrationRemoteTransportURLWaitsAndErrors(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "hand")
	if err := e.Management.Client.Create(ctx, newNova("hand")); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "hand", novav1alpha1.ComputeConfigPublishedReason)
	published, _ := getSecret(t, "hand-remote-compute-config")

	// The key disappears: wait, keep the old remote contract, keep serving
	// the in-cluster one.
	putSecret(t, "hand-transport", map[string]string{"other": "x"})
	c := waitCondition(t, "hand", novav1alpha1.WaitingForRemoteTransportURLReason)
	if !strings.HasPrefix(c.Message, "spec.remoteCompute.transportURLSecretRef:") {
		t.Errorf("message = %q", c.Message)
	}
	kept, err := getSecret(t, "hand-remote-compute-config")
	if err != nil || kept.ResourceVersion != published.ResourceVersion {
		t.Errorf("the last remote contract was not kept: %v", err)
	}
	putSecret(t, "hand-password", map[string]string{"password": rotatedPass})
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		s, err := getSecret(t, "hand-compute-config")
		return err == nil && string(s.Data["password"]) == rotatedPass, nil
	})
	if err != nil {
		t.Error("waiting for the remote URL halted the in-cluster contract")
	}

	// A URL of another scheme is an error naming the scheme, not the URL.
	putSecret(t, "hand-transport", map[string]string{"transport_url": "amqp://nova:remote-PASSWORD-91cc@broker:5672/"})
	c = waitCondition(t, "hand", novav1alpha1.ComputeConfigErrorReason)
	if !strings.Contains(c.Message, `"amqp"`) || strings.Contains(c.Message, "broker") {
		t.Errorf("message = %q", c.Message)
	}
	if n := getNova(t, "hand"); n.Status.RemoteComputeConfigSecretRef == nil {
		t.Error("an error cleared the remote reference")
	}
	assertNoLeak(t)
}

// A password with a newline leaves the published contract unchanged and
// names the section, not the value.
func TestIntegrationControlCharacterLeavesThePublishedContract(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	inputs(t, "ctl")
	if err := e.Management.Client.Create(ctx, newNova("ctl")); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "ctl", novav1alpha1.ComputeConfigPublishedReason)
	published, _ := getSecret(t, "ctl-compute-config")

	putSecret(t, "ctl-password", map[string]string{"password": "line-one\n[DEFAULT]\ndebug = true"})
	c := waitCondition(t, "ctl", novav1alpha1.ComputeConfigErrorReason)
	if !strings.Contains(c.Message, "[keystone_authtoken]") || strings.Contains(c.Message, "line-one") {
		t.Errorf("message = %q, want the section and not the value", c.Message)
	}
	now, _ := getSecret(t, "ctl-compute-config")
	if now.ResourceVersion != published.ResourceVersion || string(now.Data["password"]) != servicePass {
		t.Error("the published contract changed")
	}
	if ready := getNova(t, "ctl"); readyReason(ready) != novav1alpha1.ComputeConfigErrorReason {
		t.Errorf("Ready reason = %q", readyReason(ready))
	}
	// Fixing the input publishes again.
	putSecret(t, "ctl-password", map[string]string{"password": servicePass})
	waitCondition(t, "ctl", novav1alpha1.ComputeConfigPublishedReason)
}

func readyReason(n *novav1alpha1.Nova) string {
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Reason
		}
	}
	return ""
}

// A missing input Secret waits under its own reason and writes nothing.
func TestIntegrationMissingInputWaits(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	if err := e.Management.Client.Create(ctx, newNova("lonely")); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, "lonely", novav1alpha1.WaitingForInputsReason)
	if !strings.Contains(c.Message, "spec.messaging.secretRef") || !strings.Contains(c.Message, "lonely-bus") {
		t.Errorf("message = %q", c.Message)
	}
	if _, err := getSecret(t, "lonely-compute-config"); !apierrors.IsNotFound(err) {
		t.Errorf("a contract was written without its inputs: %v", err)
	}
	inputs(t, "lonely")
	waitCondition(t, "lonely", novav1alpha1.ComputeConfigPublishedReason)
}
