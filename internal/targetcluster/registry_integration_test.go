package targetcluster_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/kubeconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

// A child written onto compute-a maps back to its owner; the same labelled
// object on compute-b does not, because the owner does not name compute-b.
func TestIntegrationRemoteChildWatchEnqueuesOnlyFromTheOwnersCluster(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	a, b := env.ComputeCluster("compute-a"), env.ComputeCluster("compute-b")

	newOwner(t, "watch-owner", "compute-a")
	waitReady(t, "watch-owner", "ChildWritten", 30*time.Second)
	child, err := getChild(t, a.Client, "watch-owner")
	if err != nil {
		t.Fatalf("the child is not on compute-a: %v", err)
	}
	if child.Labels[childwriter.OwnerKindLabel] != "OVNChassis" || child.Labels[childwriter.OwnerNameLabel] != "watch-owner" ||
		child.Labels[childwriter.OwnerNamespaceLabel] != testenv.WorkloadNamespace || len(child.OwnerReferences) != 0 {
		t.Errorf("child ownership = labels %v, ownerReferences %v", child.Labels, child.OwnerReferences)
	}
	if _, err := getChild(t, b.Client, "watch-owner"); !apierrors.IsNotFound(err) {
		t.Errorf("the child leaked onto compute-b: %v", err)
	}

	// Drift on compute-a is seen and repaired through the remote watch.
	before := op.writer.passCount("watch-owner")
	child.Data["owner"] = "tampered"
	if err := a.Client.Update(ctx, child); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, err := getChild(t, a.Client, "watch-owner")
		return err == nil && got.Data["owner"] == "watch-owner", nil
	})
	if err != nil {
		t.Fatal("a change to the child on compute-a did not enqueue its owner")
	}
	if op.writer.passCount("watch-owner") <= before {
		t.Error("the repair happened without a pass of the owner")
	}

	// The same labelled object on compute-b, created and changed, never
	// enqueues the owner.
	settled := waitSettled(t, "watch-owner")
	impostor := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: childName("watch-owner"), Namespace: testenv.WorkloadNamespace, Labels: child.Labels},
		Data:       map[string]string{"owner": "impostor"},
	}
	if err := b.Client.Create(ctx, impostor); err != nil {
		t.Fatal(err)
	}
	impostor.Data["owner"] = "changed"
	if err := b.Client.Update(ctx, impostor); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if got := op.writer.passCount("watch-owner"); got != settled {
		t.Errorf("a change on compute-b enqueued the owner of a compute-a child (%d passes, want %d)", got, settled)
	}
}

// waitSettled waits until the owner's pass count stays put for a second and
// returns it.
func waitSettled(t *testing.T, name string) int {
	t.Helper()
	last := -1
	for range 30 {
		n := op.writer.passCount(name)
		if n == last {
			return n
		}
		last = n
		time.Sleep(time.Second)
	}
	t.Fatalf("%s never stopped reconciling", name)
	return 0
}

// identity asks the compute cluster who the registry's client is.
func identity(t *testing.T, remote *targetcluster.Remote) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	if err := remote.Client.Create(context.Background(), review); err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	return review.Status.UserInfo.Username
}

func engagements(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "anvil_target_cluster_engagements_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("the engagements metric is not registered")
	return 0
}

func computeBRegistration(ctx context.Context, t *testing.T) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: env.ClustersNamespace, Name: "compute-b"}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A changed kubeconfig re-engages with the new credential; the same content
// written again does not.
func TestIntegrationReengagesOnlyWhenTheKubeconfigChanges(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	b := env.ComputeCluster("compute-b")

	cfg, err := b.AddUser("rotated-registration", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := kubeconfig.Embedded("compute-b", cfg)
	if err != nil {
		t.Fatal(err)
	}
	original := computeBRegistration(ctx, t).Data[targetcluster.KubeconfigKey]
	t.Cleanup(func() {
		s := computeBRegistration(ctx, t)
		s.Data[targetcluster.KubeconfigKey] = original
		if err := env.Management.Client.Update(ctx, s); err != nil {
			t.Error(err)
		}
		waitIdentity(t, "compute-b", "anvil-registration")
	})

	old := waitResolves(t, "compute-b")
	if got := identity(t, old); got != "anvil-registration" {
		t.Fatalf("before rotation the registry is %q", got)
	}
	count := engagements(t)

	s := computeBRegistration(ctx, t)
	s.Data[targetcluster.KubeconfigKey] = rotated
	if err := env.Management.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	current := waitIdentity(t, "compute-b", "rotated-registration")
	if current.Client == old.Client {
		t.Error("the old client is still the one Resolve returns")
	}
	if got := engagements(t); got != count+1 {
		t.Errorf("engagements went from %v to %v, want one more", count, got)
	}

	// Rewriting the same content, and touching only a label, changes nothing.
	s = computeBRegistration(ctx, t)
	s.Labels["touched"] = "yes"
	if err := env.Management.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	again, err := op.registry.Resolve("compute-b")
	if err != nil {
		t.Fatal(err)
	}
	if again.Client != current.Client || engagements(t) != count+1 {
		t.Error("rewriting the Secret with the same kubeconfig re-engaged the cluster")
	}
}

func waitIdentity(t *testing.T, cluster, user string) *targetcluster.Remote {
	t.Helper()
	var remote *targetcluster.Remote
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := op.registry.Resolve(cluster)
		if err != nil {
			return false, nil //nolint:nilerr // not engaged yet
		}
		review := &authenticationv1.SelfSubjectReview{}
		if err := r.Client.Create(ctx, review); err != nil {
			return false, nil //nolint:nilerr // the new engagement may still start
		}
		remote = r
		return review.Status.UserInfo.Username == user, nil
	})
	if err != nil {
		t.Fatalf("%s never engaged as %s", cluster, user)
	}
	return remote
}

// Refused registrations never engage, say why on the Secret, and never
// repeat a credential.
func TestIntegrationRefusesUnusableRegistrations(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	a := env.ComputeCluster("compute-a")
	good, err := a.RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	withUser := func(mutate func(*clientcmdapi.AuthInfo)) []byte {
		kc, err := clientcmd.Load(good)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kc.AuthInfos {
			mutate(u)
		}
		raw, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	cases := []struct {
		name       string
		kubeconfig []byte
		namespaces string
		reason     targetcluster.RefusalReason
	}{
		{name: "refused-exec", reason: targetcluster.RefusedExecCredential, kubeconfig: withUser(func(u *clientcmdapi.AuthInfo) {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/get-token", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		})},
		{name: "refused-tokenfile", reason: targetcluster.RefusedCredentialFile, kubeconfig: withUser(func(u *clientcmdapi.AuthInfo) {
			u.ClientCertificateData, u.ClientKeyData, u.TokenFile = nil, nil, "/var/run/secrets/token"
		})},
		{name: "refused-namespaces", reason: targetcluster.RefusedInvalidNamespaces, kubeconfig: good, namespaces: "openstack,Not_Valid"},
		{name: "refused-insecure", reason: targetcluster.RefusedInsecureTLS, kubeconfig: withCluster(t, good, func(c *clientcmdapi.Cluster) {
			c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
		})},
		{name: "refused-http", reason: targetcluster.RefusedPlaintextServer, kubeconfig: withCluster(t, good, func(c *clientcmdapi.Cluster) {
			c.Server = strings.Replace(c.Server, "https://", "http://", 1)
		})},
		{name: "refused-proxy", reason: targetcluster.RefusedProxy, kubeconfig: withCluster(t, good, func(c *clientcmdapi.Cluster) {
			c.ProxyURL = "http://proxy-PASSWORD@127.0.0.1:3128"
		})},
		{name: "refused-impersonation", reason: targetcluster.RefusedImpersonation, kubeconfig: withUser(func(u *clientcmdapi.AuthInfo) {
			u.Impersonate = "system:admin"
		})},
	}
	for _, c := range cases {
		s := targetcluster.BuildRegistrationSecret(c.name, env.ClustersNamespace, c.kubeconfig, c.namespaces)
		if err := env.Management.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events []corev1.Event
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				events = secretEvents(ctx, t, c.name, targetcluster.ReasonRegistrationRefused)
				return len(events) > 0, nil
			})
			if err != nil {
				t.Fatal("no RegistrationRefused event on the Secret")
			}
			if !strings.Contains(events[0].Message, string(c.reason)) {
				t.Errorf("event message %q does not name %s", events[0].Message, c.reason)
			}
			_, err = op.registry.Resolve(c.name)
			if !targetcluster.IsUnavailable(err) || !strings.Contains(err.Error(), "refused") {
				t.Errorf("Resolve = %v, want an unavailable error that says the registration was refused", err)
			}
		})
	}
	// No log line and no event repeats a credential or a file path.
	kc, _ := clientcmd.Load(good)
	var secrets []string
	for _, u := range kc.AuthInfos {
		secrets = append(secrets, string(u.ClientKeyData))
	}
	secrets = append(secrets, "/var/run/secrets/token", "/bin/get-token", "proxy-PASSWORD", "system:admin")
	assertNoLeak(t, secrets...)
}

// withCluster returns kubeconfig with mutate applied to every cluster entry.
func withCluster(t *testing.T, kubeconfig []byte, mutate func(*clientcmdapi.Cluster)) []byte {
	t.Helper()
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		mutate(c)
	}
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// awaitSecretEvents is secretEvents once at least one such event exists, or
// after ten seconds: the recorder writes events in the background, so the
// state a test waited for can be visible before its event is.
func awaitSecretEvents(ctx context.Context, t *testing.T, name, reason string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out = secretEvents(ctx, t, name, reason); len(out) > 0 {
			break
		}
	}
	return out
}

func secretEvents(ctx context.Context, t *testing.T, name, reason string) []corev1.Event {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Management.Client.List(ctx, list, client.InNamespace(env.ClustersNamespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// A registration scoped by namespaces reads only there, and a Secret edit
// that fixes a refused registration engages it.
func TestIntegrationNamespaceScopedRegistration(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	a := env.ComputeCluster("compute-a")

	// A user that may only work in openstack, as the access chart grants.
	cfg, err := a.AddUser("scoped-registration")
	if err != nil {
		t.Fatal(err)
	}
	grantNamespace(ctx, t, a, "scoped-registration", testenv.WorkloadNamespace)
	grantNodeRead(ctx, t, a, "scoped-registration")
	raw, err := kubeconfig.Embedded("compute-a", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := targetcluster.BuildRegistrationSecret("compute-a-scoped", env.ClustersNamespace, raw, testenv.WorkloadNamespace)
	if err := env.Management.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	remote := waitResolves(t, "compute-a-scoped")
	if got := strings.Join(remote.Namespaces, ","); got != testenv.WorkloadNamespace {
		t.Errorf("scope = %q", got)
	}
	if err := remote.Client.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(testenv.WorkloadNamespace)); err != nil {
		t.Errorf("reading inside the scope failed: %v", err)
	}
	err = remote.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "anything"}, &corev1.ConfigMap{})
	if err == nil || !strings.Contains(err.Error(), "unknown namespace for the cache") {
		t.Errorf("reading outside the scope: err = %v, want the cache to refuse", err)
	}
}

func grantNamespace(ctx context.Context, t *testing.T, c *testenv.Cluster, user, namespace string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// Deleting an owner sweeps its children and nothing else.
func TestIntegrationDeletionSweepsOnlyOwnedChildren(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	a := env.ComputeCluster("compute-a")

	owner := newOwner(t, "sweep-owner", "compute-a")
	waitReady(t, "sweep-owner", "ChildWritten", 30*time.Second)
	if err := env.Management.Client.Get(ctx, client.ObjectKeyFromObject(owner), owner); err != nil {
		t.Fatal(err)
	}
	if !containsString(owner.Finalizers, placement.RemoteChildrenFinalizer) {
		t.Fatalf("finalizers = %v", owner.Finalizers)
	}

	// An unlabelled Secret with the child's name, and a ConfigMap of
	// another owner: neither is the owner's to delete.
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: childName("sweep-owner"), Namespace: testenv.WorkloadNamespace}}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "someone-elses", Namespace: testenv.WorkloadNamespace,
		Labels: map[string]string{childwriter.OwnerKindLabel: "OVNChassis", childwriter.OwnerNameLabel: "another-owner", childwriter.OwnerNamespaceLabel: testenv.WorkloadNamespace},
	}}
	for _, o := range []client.Object{unlabelled, foreign} {
		if err := a.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	if err := env.Management.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	waitGone(t, env.Management.Client, &ovnv1alpha1.OVNChassis{ObjectMeta: owner.ObjectMeta}, 30*time.Second)
	waitGone(t, a.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: childName("sweep-owner"), Namespace: testenv.WorkloadNamespace}}, 30*time.Second)
	for _, o := range []client.Object{unlabelled, foreign} {
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("%T %s was swept: %v", o, o.GetName(), err)
		}
	}
}

// An owner whose cluster does not resolve gets no finalizer and writes
// nothing; once deleting, it waits and then abandons its children when the
// injected clock passes the window.
func TestIntegrationUnresolvableClusterAndTheAbandonPath(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	b := env.ComputeCluster("compute-b")

	stray := newOwner(t, "stray-owner", "nowhere")
	cond := waitReady(t, "stray-owner", anvilmeta.TargetClusterUnavailableReason, 30*time.Second)
	if !strings.Contains(cond.Message, `"nowhere"`) || !strings.Contains(cond.Message, "not registered") {
		t.Errorf("message = %q", cond.Message)
	}
	if err := env.Management.Client.Get(ctx, client.ObjectKeyFromObject(stray), stray); err != nil {
		t.Fatal(err)
	}
	if len(stray.Finalizers) != 0 {
		t.Errorf("an owner that never resolved got finalizers %v", stray.Finalizers)
	}
	if err := env.Management.Client.Delete(ctx, stray); err != nil {
		t.Fatal(err)
	}
	waitGone(t, env.Management.Client, stray, 10*time.Second)

	// A second registration of compute-b that goes away under a live owner.
	raw := computeBRegistration(ctx, t).Data[targetcluster.KubeconfigKey]
	s := targetcluster.BuildRegistrationSecret("ephemeral", env.ClustersNamespace, raw, "")
	if err := env.Management.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitResolves(t, "ephemeral")
	owner := newOwner(t, "abandoned-owner", "ephemeral")
	waitReady(t, "abandoned-owner", "ChildWritten", 30*time.Second)

	if err := env.Management.Client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := env.Management.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	waitReady(t, "abandoned-owner", anvilmeta.TargetClusterUnavailableReason, 30*time.Second)
	time.Sleep(2 * unavailableRequeue)
	if err := env.Management.Client.Get(ctx, client.ObjectKeyFromObject(owner), owner); err != nil {
		t.Fatalf("the owner was released before the window passed: %v", err)
	}

	// From now, not from when the shared operator started: earlier tests
	// may have taken minutes, and the window counts from the deletion.
	op.clock.SetTime(time.Now().Add(6 * time.Minute))
	waitGone(t, env.Management.Client, &ovnv1alpha1.OVNChassis{ObjectMeta: owner.ObjectMeta}, 30*time.Second)
	events := &corev1.EventList{}
	if err := env.Management.Client.List(ctx, events, client.InNamespace(testenv.WorkloadNamespace)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events.Items {
		if e.InvolvedObject.Name == "abandoned-owner" && e.Reason == placement.ReasonRemoteChildrenAbandoned && e.Type == corev1.EventTypeWarning {
			found = true
		}
	}
	if !found {
		t.Error("no RemoteChildrenAbandoned Warning event")
	}
	if _, err := getChild(t, b.Client, "abandoned-owner"); err != nil {
		t.Errorf("the abandoned child should stay on the cluster: %v", err)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// median returns the middle of the samples.
func median(samples []time.Duration) time.Duration {
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// convergeLatency creates n owners on cluster one after another and returns
// how long each took from create until its child was confirmed written.
func convergeLatency(t *testing.T, prefix, cluster string, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range n {
		name := prefix + "-" + string(rune('a'+i))
		signal := op.writer.writtenSignal(name)
		start := time.Now()
		newOwner(t, name, cluster)
		select {
		case <-signal:
			out = append(out, time.Since(start))
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not converge", name)
		}
	}
	return out
}

// Stopping compute-b's apiserver flips only compute-b's owners; compute-a's
// keep converging as fast as before; compute-b recovers without a restart.
func TestIntegrationUnreachableClusterCostsOnlyItsOwnObjects(t *testing.T) {
	startOperator(t)
	b := env.ComputeCluster("compute-b")

	for _, name := range []string{"on-b-1", "on-b-2", "on-b-3"} {
		newOwner(t, name, "compute-b")
		waitReady(t, name, "ChildWritten", 30*time.Second)
	}
	const samples = 9
	baseline := convergeLatency(t, "lat-up", "compute-a", samples)

	stopped := time.Now()
	if err := b.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = b.StartAPIServer()
		}
	})
	for _, name := range []string{"on-b-1", "on-b-2", "on-b-3"} {
		cond := waitReady(t, name, anvilmeta.TargetClusterUnavailableReason, 30*time.Second)
		if !strings.Contains(cond.Message, "compute-b") {
			t.Errorf("%s: message %q does not name the cluster", name, cond.Message)
		}
		// The probe's dial error stays in the log: a condition that
		// repeated it would tell a registration's writer what listens at
		// the address it named.
		if !strings.Contains(cond.Message, targetcluster.UnreachableReason) || strings.Contains(cond.Message, "refused") {
			t.Errorf("%s: message %q, want the fixed %q", name, cond.Message, targetcluster.UnreachableReason)
		}
	}
	t.Logf("compute-b's owners reported TargetClusterUnavailable %s after its apiserver stopped", time.Since(stopped).Round(100*time.Millisecond))
	// The alert on an unreachable cluster reads this gauge: it names the
	// cluster that is down and only that one.
	if v, ok := reachable(t, "compute-b"); !ok || v != 0 {
		t.Errorf("anvil_target_cluster_reachable{cluster=compute-b} = %v (present %v) while its apiserver is down, want 0", v, ok)
	}
	if v, ok := reachable(t, "compute-a"); !ok || v != 1 {
		t.Errorf("anvil_target_cluster_reachable{cluster=compute-a} = %v (present %v), want 1", v, ok)
	}

	degraded := convergeLatency(t, "lat-down", "compute-a", samples)
	up, down := median(baseline), median(degraded)
	ratio := float64(down) / float64(up)
	t.Logf("compute-a convergence, median of %d: %s with compute-b up, %s with compute-b down (ratio %.2f)", samples, up, down, ratio)
	// Loopback latencies are a few milliseconds, where scheduler noise on
	// two busy cores alone can double them. Waiting on the unreachable
	// cluster would cost at least a dial timeout, seconds, so a difference
	// under half a second is noise, not a slowdown.
	if ratio > 1.5 && down-up > 500*time.Millisecond {
		t.Errorf("an unreachable compute-b slowed compute-a down %.2fx", ratio)
	}

	if err := b.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	for _, name := range []string{"on-b-1", "on-b-2", "on-b-3"} {
		waitReady(t, name, "ChildWritten", time.Minute)
	}
	if v, ok := reachable(t, "compute-b"); !ok || v != 1 {
		t.Errorf("anvil_target_cluster_reachable{cluster=compute-b} = %v (present %v) once it answers again, want 1", v, ok)
	}
}

// reachable reads the reachability gauge of one cluster, and whether it
// has a series at all.
func reachable(t *testing.T, cluster string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "anvil_target_cluster_reachable" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// assertNoLeak fails if any secret string appears in the operator's log or
// in any event on the management cluster.
func assertNoLeak(t *testing.T, secrets ...string) {
	t.Helper()
	testenv.AssertNoLeak(t, append([]string{op.log.String()}, env.Management.EventMessages(t)...), secrets)
}
