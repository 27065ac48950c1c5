package targetcluster_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// restartNamespace holds the registrations of the restart test, apart from
// the shared operator's, so that only the test's own registries see them.
const restartNamespace = "restart-clusters"

// The endpoint pin outlives the operator: a registration redirected while
// the operator is down is refused by the next one, an acknowledged change
// moves the stored pin, and a settled registry writes nothing to the store.
func TestIntegrationEndpointPinSurvivesARestart(t *testing.T) {
	testenv.Require(t, env)
	ctx, name := context.Background(), "restarted"
	a, b := env.ComputeCluster("compute-a"), env.ComputeCluster("compute-b")
	onA, err := a.RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	onB := computeBRegistration(ctx, t).Data[targetcluster.KubeconfigKey]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restartNamespace}}
	if err := env.Management.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := targetcluster.BuildRegistrationSecret(name, restartNamespace, onA, "")
	if err := env.Management.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(ctx, s) })

	// First life: no pin yet, so the endpoint is trusted and pinned.
	first := startRegistry(t)
	waitOn(t, first.registry, name, b, a)
	if got := storedPin(ctx, t, name); got != fingerprint(t, onA) {
		t.Fatalf("after the first engagement the store pins %q, want compute-a's fingerprint", got)
	}
	first.stop()

	// Redirected while no operator runs: the next one still refuses it.
	writeRegistration(ctx, t, name, onB, "")
	second := startRegistry(t)
	waitRefused(t, second.registry, name)
	if got := storedPin(ctx, t, name); got != fingerprint(t, onA) {
		t.Fatalf("a refused endpoint moved the pin to %q", got)
	}

	// Acknowledged: engaged on compute-b, and the pin follows.
	writeRegistration(ctx, t, name, onB, fingerprint(t, onB))
	waitOn(t, second.registry, name, a, b)
	if got := storedPin(ctx, t, name); got != fingerprint(t, onB) {
		t.Fatalf("after the acknowledged change the store pins %q, want compute-b's fingerprint", got)
	}
	second.stop()

	// A settled registry, after a restart, engages without writing.
	before := pinsNamespace(ctx, t)
	third := startRegistry(t)
	waitOn(t, third.registry, name, a, b)
	if after := pinsNamespace(ctx, t); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a settled registry wrote the pins (resourceVersion %s, then %s)", before.ResourceVersion, after.ResourceVersion)
	}
	// The store holds fingerprints only, keyed by cluster name.
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for k, v := range pinsNamespace(ctx, t).Annotations {
		if strings.HasPrefix(k, targetcluster.PinAnnotationPrefix) && !hex16.MatchString(v) {
			t.Errorf("pin %s holds %q, which is not a fingerprint", k, v)
		}
	}
	testLegacyPin(ctx, t, third.registry, onA, onB)
}

// testLegacyPin: a pin that an earlier release kept in the namespace's
// ConfigMap still refuses a changed endpoint, and is moved onto the
// Namespace at once, so that removing the ConfigMap key, which any writer
// of the namespace may do, no longer resets the cluster's trust.
func testLegacyPin(ctx context.Context, t *testing.T, reg *targetcluster.Registry, onA, onB []byte) {
	t.Helper()
	const name = "legacy"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: targetcluster.EndpointPinsConfigMap},
		Data: map[string]string{name: fingerprint(t, onA)}}
	if err := env.Management.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	s := targetcluster.BuildRegistrationSecret(name, restartNamespace, onB, "")
	if err := env.Management.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(ctx, s) })
	waitRefused(t, reg, name)
	if got := storedPin(ctx, t, name); got != fingerprint(t, onA) {
		t.Fatalf("the legacy pin was not moved onto the Namespace (it pins %q)", got)
	}
	if err := env.Management.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	writeRegistration(ctx, t, name, onB, "")
	time.Sleep(3 * time.Second)
	if _, err := reg.Resolve(name); !targetcluster.IsUnavailable(err) {
		t.Error("deleting the legacy ConfigMap reset the cluster's trust")
	}
}

// registryLife is one run of a registry, as one operator process would be.
type registryLife struct {
	registry *targetcluster.Registry
	stop     func()
}

// startRegistry runs a registry for restartNamespace in a manager of its
// own on the shared apiservers; stop ends it as a process exit would.
func startRegistry(t *testing.T) *registryLife {
	t.Helper()
	return startRegistryIn(t, restartNamespace, true)
}

// startRegistryIn is startRegistry for the registrations in namespace,
// engaging those without namespaces only when allowClusterWide is set.
func startRegistryIn(t *testing.T, namespace string, allowClusterWide bool) *registryLife {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(env.Management.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Logger:                 zap.New(zap.WriteTo(&testenv.LogBuffer{})),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := targetcluster.New(mgr, targetcluster.Options{Namespace: namespace, ProbeInterval: time.Second, ProbeTimeout: time.Second,
		AcknowledgementPoll: time.Second, AllowClusterWide: allowClusterWide})
	if err := reg.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the manager stopped with %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &registryLife{registry: reg, stop: stop}
}

// waitOn waits until reg resolves name to a client of want (and not of
// other, which tells the two clusters apart).
func waitOn(t *testing.T, reg *targetcluster.Registry, name string, other, want *testenv.Cluster) {
	t.Helper()
	wantUID, otherUID := clusterUID(t, testenvRemote(want)), clusterUID(t, testenvRemote(other))
	if wantUID == otherUID {
		t.Fatal("the two compute clusters cannot be told apart")
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		r, err := reg.Resolve(name)
		if err != nil {
			return false, nil //nolint:nilerr // not engaged yet
		}
		uid, err := defaultNamespaceUID(r)
		return err == nil && uid == wantUID, nil
	})
	if err != nil {
		_, last := reg.Resolve(name)
		t.Fatalf("%s never reached %s: %v", name, want.Name, last)
	}
}

// waitRefused waits until reg reports name unavailable for its endpoint,
// with a reason that tells what to do and quotes no server.
func waitRefused(t *testing.T, reg *targetcluster.Registry, name string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, last = reg.Resolve(name)
		return targetcluster.IsUnavailable(last) && strings.Contains(last.Error(), string(targetcluster.RefusedEndpointChanged)), nil
	})
	if err != nil {
		t.Fatalf("%s was not refused for its endpoint: %v", name, last)
	}
	if msg := last.Error(); !strings.Contains(msg, targetcluster.AcceptEndpointAnnotation(name)) || strings.Contains(msg, "https://") {
		t.Errorf("the refusal %q must name the annotation and no server", msg)
	}
}

// writeRegistration sets the acknowledgement ("" for none) of a
// registration in restartNamespace on that Namespace, then its kubeconfig.
func writeRegistration(ctx context.Context, t *testing.T, name string, raw []byte, accept string) {
	t.Helper()
	acknowledge(ctx, t, restartNamespace, name, accept)
	s := &corev1.Secret{}
	if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	s.Data[targetcluster.KubeconfigKey] = raw
	if err := env.Management.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// pinsNamespace reads restartNamespace, whose annotations hold the pins.
func pinsNamespace(ctx context.Context, t *testing.T) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := env.Management.Client.Get(ctx, client.ObjectKey{Name: restartNamespace}, ns); err != nil {
		t.Fatalf("reading the pins: %v", err)
	}
	return ns
}

func storedPin(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	return pinsNamespace(ctx, t).Annotations[targetcluster.PinAnnotation(name)]
}
