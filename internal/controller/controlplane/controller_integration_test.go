package controlplane_test

import (
	"bytes"
	"context"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/anvil/anvil/internal/dev/kstatustest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// The projected Nova reads the Secrets the ControlPlane delivers, and
// publishes the remote contract.
func TestIntegrationProjectsTheNova(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	newControlPlane(t, "proj", true)
	waitNovaReady(t, "proj", c5c3v1alpha1.NovaReadyReason)

	n := &novav1alpha1.Nova{}
	if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "proj-nova"}, n); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(n); ref == nil || ref.Kind != "ControlPlane" || ref.Name != "proj" {
		t.Errorf("the Nova is not the ControlPlane's child: %v", n.OwnerReferences)
	}
	if n.Spec.Messaging.SecretRef.Name != "proj-nova-messaging" || n.Spec.Messaging.TLS.CABundleSecretRef.Name != "proj-nova-messaging-ca" ||
		n.Spec.RemoteCompute.TransportURLSecretRef.Name != "proj-nova-remote-messaging" ||
		n.Spec.RemoteCompute.KeystoneEndpoint != "https://keystone.example.com/v3" {
		t.Errorf("projected spec = %+v", n.Spec)
	}
	if got := string(localSecret(t, "proj-nova-remote-messaging").Data["transport_url"]); got != remoteBusURL {
		t.Error("the handed-over URL was not delivered to the child")
	}
	if n.Status.RemoteComputeConfigSecretRef == nil || n.Status.RemoteComputeConfigSecretRef.Name != "proj-nova-remote-compute-config" {
		t.Errorf("the child did not publish the remote contract: %+v", n.Status)
	}
	assertNoLeak(t)
}

// A missing hand-over waits and writes no child; a non-rabbit one is an
// error naming the scheme only.
func TestIntegrationRemoteMessagingHandOver(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	cp := newControlPlane(t, "hand", false)
	waitNovaReady(t, "hand", c5c3v1alpha1.NovaReadyReason)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
			return err
		}
		cp.Spec.Services.Nova.RemoteCompute = &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "hand-missing"}}
		return e.Management.Client.Update(ctx, cp)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := waitNovaReady(t, "hand", c5c3v1alpha1.WaitingForRemoteMessagingReason)
	// A Secret not there yet is a wait (GitOps may apply it later):
	// InProgress, not Failed.
	kstatustest.Await(t, e.Management.Client, cp.DeepCopy(), status.InProgressStatus)
	if !strings.HasPrefix(c.Message, "services.nova.remoteCompute.transportURLSecretRef:") {
		t.Errorf("message = %q", c.Message)
	}
	n := &novav1alpha1.Nova{}
	if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "hand-nova"}, n); err != nil {
		t.Fatal(err)
	}
	if n.Spec.RemoteCompute != nil {
		t.Error("the child was written although the hand-over is missing")
	}

	putSecret(t, "hand-missing", map[string]string{"transport_url": "amqp://nova:remote-PASSWORD-b2@broker:5672/"})
	c = waitNovaReady(t, "hand", c5c3v1alpha1.NovaRemoteMessagingErrorReason)
	kstatustest.Await(t, e.Management.Client, cp.DeepCopy(), status.FailedStatus)
	if !strings.Contains(c.Message, `"amqp"`) || strings.Contains(c.Message, "broker") {
		t.Errorf("message = %q", c.Message)
	}
	putSecret(t, "hand-missing", map[string]string{"transport_url": remoteBusURL})
	waitNovaReady(t, "hand", c5c3v1alpha1.NovaReadyReason)
	assertNoLeak(t)
}

// waitMirror waits for the mirror on a cluster to satisfy ok.
func waitMirror(t *testing.T, cluster, name string, ok func(*corev1.Secret) bool, timeout time.Duration) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		s, err := remoteSecret(t, cluster, name)
		if err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		got = s
		return ok(s), nil
	})
	if err != nil {
		t.Fatalf("the mirror %s on %s did not converge within %s", name, cluster, timeout)
	}
	return got
}

// waitLocalSecret waits up to 30 s until a management-cluster Secret
// satisfies ok.
func waitLocalSecret(t *testing.T, name string, ok func(*corev1.Secret) bool) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, s); err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		got = s
		return ok(s), nil
	})
	if err != nil {
		t.Fatalf("the Secret %s did not converge within 30s", name)
	}
	return got
}

// The mirror follows the pools: it appears on the clusters that host one,
// carries the remote contract with its labels, is updated in place on
// rotation, and switches to the in-cluster contract with remoteCompute.
func TestIntegrationMirrorsTheContractOntoPoolClusters(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	newControlPlane(t, "mir", true)
	waitNovaReady(t, "mir", c5c3v1alpha1.NovaReadyReason)
	newPool(t, "mir", "mir-a", "compute-a")

	remoteContract := localSecret(t, "mir-nova-remote-compute-config")
	a := waitMirror(t, "compute-a", "mir-nova-compute-config", func(s *corev1.Secret) bool {
		return bytes.Equal(s.Data["nova-compute.conf"], remoteContract.Data["nova-compute.conf"])
	}, 30*time.Second)
	for k, v := range remoteContract.Data {
		if !bytes.Equal(a.Data[k], v) {
			t.Errorf("mirror key %s differs from the remote contract", k)
		}
	}
	if len(a.Data) != len(remoteContract.Data) {
		t.Errorf("mirror has %d keys, the contract %d", len(a.Data), len(remoteContract.Data))
	}
	wantLabels := map[string]string{
		c5c3v1alpha1.ComputeConfigMirrorLabel: "true",
		childwriter.OwnerKindLabel:            "ControlPlane",
		childwriter.OwnerNameLabel:            "mir",
		childwriter.OwnerNamespaceLabel:       testNamespace,
	}
	for k, v := range wantLabels {
		if a.Labels[k] != v {
			t.Errorf("mirror label %s = %q, want %q", k, a.Labels[k], v)
		}
	}
	if len(a.OwnerReferences) != 0 {
		t.Errorf("a remote child carries ownerReferences: %v", a.OwnerReferences)
	}
	for _, other := range []string{"compute-b", "compute-c", "compute-d"} {
		if _, err := remoteSecret(t, other, "mir-nova-compute-config"); !apierrors.IsNotFound(err) {
			t.Errorf("the mirror appeared on %s without a pool there: %v", other, err)
		}
	}

	// A second pool on compute-b adds compute-b.
	newPool(t, "mir", "mir-b", "compute-b")
	b := waitMirror(t, "compute-b", "mir-nova-compute-config", func(*corev1.Secret) bool { return true }, 30*time.Second)
	waitNovaReady(t, "mir", c5c3v1alpha1.NovaReadyReason)

	// Rotating the service password reaches both mirrors in place; how
	// fast is make bench's P1, not a bound here.
	start := time.Now()
	putSecret(t, "mir-nova-password", map[string]string{"password": rotatedPass})
	for _, m := range []*corev1.Secret{a, b} {
		cluster := "compute-a"
		if m == b {
			cluster = "compute-b"
		}
		got := waitMirror(t, cluster, m.Name, func(s *corev1.Secret) bool { return string(s.Data["password"]) == rotatedPass },
			30*time.Second)
		if got.UID != m.UID || got.ResourceVersion == m.ResourceVersion || got.Name != m.Name {
			t.Errorf("the mirror on %s was not updated in place", cluster)
		}
	}
	t.Logf("both mirrors carried the rotated password after %s", time.Since(start).Round(time.Millisecond))
	// The pass renders the mirror itself; once the Nova has published the
	// rotated contract, the two are the same, key for key.
	published := waitLocalSecret(t, "mir-nova-remote-compute-config", func(s *corev1.Secret) bool { return string(s.Data["password"]) == rotatedPass })
	mirrored, err := remoteSecret(t, "compute-a", "mir-nova-compute-config")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(published.Data, mirrored.Data, bytes.Equal) {
		t.Error("after the rotation, the mirror differs from the contract the Nova published")
	}

	// Clearing remoteCompute switches the mirrors to the in-cluster contract.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "mir"}, cp); err != nil {
			return err
		}
		cp.Spec.Services.Nova.RemoteCompute = nil
		return e.Management.Client.Update(ctx, cp)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []string{"compute-a", "compute-b"} {
		waitMirror(t, cluster, "mir-nova-compute-config", func(s *corev1.Secret) bool {
			local := localSecret(t, "mir-nova-compute-config")
			return bytes.Equal(s.Data["transport_url"], local.Data["transport_url"]) && string(s.Data["transport_url"]) == busURL
		}, 30*time.Second)
	}
	assertNoLeak(t)
}

// A Secret of the mirror's name that the ControlPlane did not write is
// never overwritten; the other cluster is still served.
func TestIntegrationMirrorNeverOverwritesAForeignSecret(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	handCopy := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hc-nova-compute-config", Namespace: testNamespace},
		Data:       map[string][]byte{"nova-compute.conf": []byte("copied by hand")},
	}
	if err := env.ComputeCluster("compute-a").Client.Create(ctx, handCopy); err != nil {
		t.Fatal(err)
	}
	newControlPlane(t, "hc", true)
	waitNovaReady(t, "hc", c5c3v1alpha1.NovaReadyReason)
	newPool(t, "hc", "hc-a", "compute-a")
	newPool(t, "hc", "hc-b", "compute-b")

	c := waitNovaReady(t, "hc", c5c3v1alpha1.NovaComputeConfigErrorReason)
	if !strings.Contains(c.Message, "hc-nova-compute-config") || !strings.Contains(c.Message, "compute-a") {
		t.Errorf("message = %q, want it to name the Secret and the cluster", c.Message)
	}
	waitMirror(t, "compute-b", "hc-nova-compute-config", func(s *corev1.Secret) bool { return s.Labels[c5c3v1alpha1.ComputeConfigMirrorLabel] == "true" }, 30*time.Second)
	got, err := remoteSecret(t, "compute-a", "hc-nova-compute-config")
	if err != nil || string(got.Data["nova-compute.conf"]) != "copied by hand" || got.ResourceVersion != handCopy.ResourceVersion {
		t.Errorf("the hand copy was changed: %v", err)
	}
	// Nor does the pool on compute-a take the hand copy for the contract:
	// its Nova is the ControlPlane's, and only the ControlPlane's copy is
	// vouched for. compute-b's pool has the delivered one.
	cond := waitPoolConfigReason(t, "hc-a", novav1alpha1.ComputeConfigNotDeliveredReason)
	if !strings.Contains(cond.Message, "hc-nova-compute-config") || strings.Contains(cond.Message, "copied by hand") {
		t.Errorf("ConfigReady %q must name the Secret and quote none of it", cond.Message)
	}
	waitPoolConfigReason(t, "hc-b", novav1alpha1.ConfigRenderedReason)
	ds := &appsv1.DaemonSetList{}
	if err := env.ComputeCluster("compute-a").Client.List(ctx, ds, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		if strings.HasPrefix(d.Name, "hc-a") {
			t.Errorf("the pool placed DaemonSet %s on the hand copy", d.Name)
		}
	}
}

// waitPoolConfigReason waits until the pool's ConfigReady has the reason.
func waitPoolConfigReason(t *testing.T, name, reason string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p := &novav1alpha1.NovaCompute{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, p); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		got = apimeta.FindStatusCondition(p.Status.Conditions, novav1alpha1.ConfigReadyCondition)
		return got != nil && got.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("pool %s: ConfigReady never reached %s (last %+v)", name, reason, got)
	}
	return got
}

// Without metadataSharedSecretRef the ControlPlane generates the metadata
// shared secret once, the contract carries it, and deleting the Secret
// rotates it.
func TestIntegrationGeneratesAndRotatesTheMetadataSecret(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	newControlPlane(t, "meta", false)
	waitNovaReady(t, "meta", c5c3v1alpha1.NovaReadyReason)
	generated := regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`)
	first := localSecret(t, "meta-nova-metadata-secret")
	value := string(first.Data["shared_secret"])
	if !generated.MatchString(value) || len(first.Data) != 1 {
		t.Fatalf("the generated Secret has %d key(s) and a shared_secret of %d characters, want one key of 32 URL-safe characters", len(first.Data), len(value))
	}
	carried := func(want string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			contract := localSecret(t, "meta-nova-compute-config")
			return string(contract.Data["metadata_proxy_shared_secret"]) == want, nil
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, carried(value)); err != nil {
		t.Fatal("the compute contract does not carry the generated secret")
	}

	if err := env.Management.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	var rotated string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "meta-nova-metadata-secret"}, s); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		rotated = string(s.Data["shared_secret"])
		return s.UID != first.UID, nil
	})
	if err != nil {
		t.Fatal("deleting the generated Secret did not make a new one")
	}
	if rotated == value || !generated.MatchString(rotated) {
		t.Fatalf("the new secret is not a fresh 32-character value (%d characters, same as before: %v)", len(rotated), rotated == value)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, carried(rotated)); err != nil {
		t.Fatal("the compute contract does not carry the rotated secret")
	}
	texts := append([]string{logs.String()}, env.Management.EventMessages(t)...)
	testenv.AssertNoLeak(t, texts, []string{value, rotated})
}
