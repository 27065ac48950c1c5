package targetcluster_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/kubeconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

// An engaged registration whose server and CA change is refused until the
// clusters Namespace carries the new endpoint's fingerprint (on the Secret
// it approves nothing); a token rotation needs no acknowledgement; an
// acknowledgement left in place does not approve a later change; nothing
// says where the endpoint is.
func TestIntegrationEndpointChangeNeedsTheAcknowledgement(t *testing.T) {
	startOperator(t)
	ctx, name := context.Background(), pinnedName
	a, b := env.ComputeCluster("compute-a"), env.ComputeCluster("compute-b")
	onA, err := a.RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	onB := computeBRegistration(ctx, t).Data[targetcluster.KubeconfigKey]
	s := targetcluster.BuildRegistrationSecret(name, env.ClustersNamespace, onA, "")
	if err := env.Management.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(ctx, s) })
	if got, want := clusterUID(t, waitResolves(t, name)), clusterUID(t, testenvRemote(a)); got != want {
		t.Fatal("the registration does not reach compute-a")
	}
	count := engagements(t)

	// Another server and CA, unacknowledged: refused, and disengaged.
	updateRegistration(ctx, t, onB, "")
	waitRefusedEndpoint(t, name)
	if n := len(awaitSecretEvents(ctx, t, name, targetcluster.ReasonEndpointChangeRefused)); n == 0 {
		t.Error("no EndpointChangeRefused event on the Secret")
	}
	// An object that names the cluster says, in its condition, why it
	// stopped and what acknowledges the change, and names no server. It is
	// made while the cluster is refused, so it holds no finalizer and goes
	// at once.
	owner := newOwner(t, "pinned-owner", name)
	cond := waitReady(t, owner.Name, anvilmeta.TargetClusterUnavailableReason, 30*time.Second)
	if !strings.Contains(cond.Message, string(targetcluster.RefusedEndpointChanged)) || !strings.Contains(cond.Message, targetcluster.AcceptEndpointAnnotation(name)) ||
		strings.Contains(cond.Message, "https://") {
		t.Errorf("the owner's condition %q must name the refusal and the annotation, and no server", cond.Message)
	}
	if err := env.Management.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	waitGone(t, env.Management.Client, owner, 30*time.Second)
	// An acknowledgement of another endpoint (here the old one) changes
	// nothing; nor does the right one on the Secret, where whoever may
	// edit the registration could write it. Each is given longer than the
	// registry's poll for acknowledgements.
	updateRegistration(ctx, t, onB, fingerprint(t, onA))
	assertStillRefused(t, name, count, "with the old endpoint's fingerprint")
	updateRegistration(ctx, t, onB, "")
	annotateSecret(ctx, t, name, "anvil.c5c3.io/accept-endpoint", fingerprint(t, onB))
	assertStillRefused(t, name, count, "with the fingerprint on the Secret")

	// The new endpoint's fingerprint: engaged on compute-b, with a Warning.
	updateRegistration(ctx, t, onB, fingerprint(t, onB))
	waitReachesCluster(t, name, b)
	if len(awaitSecretEvents(ctx, t, name, targetcluster.ReasonEndpointChanged)) == 0 {
		t.Error("no EndpointChanged Warning for the accepted change")
	}

	// A token rotation on compute-b keeps the endpoint and needs no new
	// acknowledgement, so a stale one is harmless.
	cfg, err := b.AddUser("pinned-rotated", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := kubeconfig.Embedded("compute-b", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(t, rotated) != fingerprint(t, onB) {
		t.Fatal("the rotated kubeconfig names another endpoint; the test needs the same one")
	}
	updateRegistration(ctx, t, rotated, fingerprint(t, onA))
	waitIdentity(t, name, "pinned-rotated")

	// Back to compute-a with compute-b's acknowledgement still on the
	// Secret: a stale acknowledgement approves nothing.
	updateRegistration(ctx, t, onA, fingerprint(t, onB))
	waitRefusedEndpoint(t, name)

	var leaks []string
	for _, raw := range [][]byte{onA, onB, rotated} {
		kc, err := clientcmd.Load(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kc.Clusters {
			leaks = append(leaks, string(c.CertificateAuthorityData))
		}
		for _, u := range kc.AuthInfos {
			leaks = append(leaks, string(u.ClientKeyData))
		}
	}
	assertNoLeak(t, append(leaks, fingerprint(t, onA), fingerprint(t, onB))...)
	for _, e := range append(secretEvents(ctx, t, name, targetcluster.ReasonEndpointChangeRefused), secretEvents(ctx, t, name, targetcluster.ReasonEndpointChanged)...) {
		if e.Type != corev1.EventTypeWarning || strings.Contains(e.Message, "https://") || strings.Contains(e.Message, "127.0.0.1") {
			t.Errorf("event %s %q must be a Warning that names no server", e.Reason, e.Message)
		}
	}
}

// testenvRemote wraps a test cluster's own client like a Remote.
func testenvRemote(c *testenv.Cluster) *targetcluster.Remote {
	return &targetcluster.Remote{Name: c.Name, Client: c.Client, Reader: c.Client, Scheme: env.Scheme}
}

// clusterUID tells clusters apart by the UID of their default namespace.
func clusterUID(t *testing.T, r *targetcluster.Remote) types.UID {
	t.Helper()
	uid, err := defaultNamespaceUID(r)
	if err != nil {
		t.Fatalf("reading the default namespace on %s: %v", r.Name, err)
	}
	return uid
}

func defaultNamespaceUID(r *targetcluster.Remote) (types.UID, error) {
	ns := &corev1.Namespace{}
	err := r.Reader.Get(context.Background(), client.ObjectKey{Name: "default"}, ns)
	return ns.UID, err
}

func fingerprint(t *testing.T, raw []byte) string {
	t.Helper()
	kc, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	return targetcluster.EndpointFingerprint(c.Server, c.CertificateAuthorityData)
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// pinnedName names the registration the endpoint test moves between
// clusters.
const pinnedName = "pinned"

// updateRegistration writes the acknowledgement ("" for none) onto the
// clusters Namespace, as a cluster administrator would, and then the
// kubeconfig onto the test's registration Secret.
func updateRegistration(ctx context.Context, t *testing.T, raw []byte, accept string) {
	t.Helper()
	acknowledge(ctx, t, env.ClustersNamespace, pinnedName, accept)
	s := &corev1.Secret{}
	if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: env.ClustersNamespace, Name: pinnedName}, s); err != nil {
		t.Fatal(err)
	}
	s.Data[targetcluster.KubeconfigKey] = raw
	if err := env.Management.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// acknowledge sets, or with "" removes, the acknowledgement of cluster's
// endpoint on namespace.
func acknowledge(ctx context.Context, t *testing.T, namespace, cluster, accept string) {
	t.Helper()
	value := any(nil)
	if accept != "" {
		value = accept
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{targetcluster.AcceptEndpointAnnotation(cluster): value}}})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := env.Management.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// annotateSecret sets one annotation on the registration Secret name.
func annotateSecret(ctx context.Context, t *testing.T, name, key, value string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.ClustersNamespace, Name: name}}
	if err := env.Management.Client.Patch(ctx, s, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// assertStillRefused checks, past a few of the registry's one-second polls
// for acknowledgements, that name is still refused and no engagement was
// added to count.
func assertStillRefused(t *testing.T, name string, count float64, what string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	if _, err := op.registry.Resolve(name); !strings.Contains(fmtErr(err), string(targetcluster.RefusedEndpointChanged)) {
		t.Errorf("%s, Resolve = %v", what, err)
	}
	if got := engagements(t); got != count {
		t.Fatalf("%s, an unacknowledged endpoint was engaged (%v engagements, want %v)", what, got, count)
	}
}

// waitRefusedEndpoint waits until the name resolves to the EndpointChanged
// refusal.
func waitRefusedEndpoint(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := op.registry.Resolve(name)
		return targetcluster.IsUnavailable(err) && strings.Contains(err.Error(), string(targetcluster.RefusedEndpointChanged)), nil
	})
	if err != nil {
		t.Fatalf("%s was not refused for its endpoint: %v", name, lastResolveError(name))
	}
}

// waitReachesCluster waits until the name resolves to a client of c.
func waitReachesCluster(t *testing.T, name string, c *testenv.Cluster) {
	t.Helper()
	want := clusterUID(t, testenvRemote(c))
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		r, err := op.registry.Resolve(name)
		if err != nil {
			return false, nil //nolint:nilerr // not engaged yet
		}
		uid, err := defaultNamespaceUID(r)
		return err == nil && uid == want, nil
	})
	if err != nil {
		t.Fatalf("%s never reached %s: %v", name, c.Name, lastResolveError(name))
	}
}
