package neutronmetadataagent_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/neutronmetadataagent"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// This suite runs the agent's controller alone on real apiservers: the
// management cluster and compute-a. No OVN controller runs, so the tests
// publish the chassis's and central's status by hand, and no pod runs,
// so the DaemonSet is judged by what was written.

var (
	env  *testenv.Environment
	logs = &testenv.LogBuffer{}
	once sync.Once
)

const ns = testenv.WorkloadNamespace

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 1}, &env))
}

// startOperator starts, once per package, a manager with the registry,
// the agent's controller, and the webhooks of the kinds the tests create
// (the harness installs every webhook configuration, and the apiserver
// refuses a create whose webhook does not answer).
func startOperator(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	once.Do(func() {
		mgr, err := e.NewManager(logs)
		if err != nil {
			t.Fatal(err)
		}
		for _, setup := range []func() error{
			func() error { return anvilwebhook.SetupOVNCentralWebhook(mgr) },
			func() error { return anvilwebhook.SetupOVNChassisWebhook(mgr, workloadpolicy.Policy{}) },
			func() error { return anvilwebhook.SetupNeutronMetadataAgentWebhook(mgr, workloadpolicy.Policy{}) },
		} {
			if err := setup(); err != nil {
				t.Fatal(err)
			}
		}
		reg := targetcluster.New(mgr, targetcluster.Options{Namespace: e.ClustersNamespace, ProbeInterval: time.Second,
			// testenv registers its compute clusters without a namespaces key.
			AllowClusterWide: true})
		if err := reg.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
		r := &neutronmetadataagent.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Registry: reg}
		if err := r.SetupWithManager(context.Background(), mgr); err != nil {
			t.Fatal(err)
		}
		if err := testenv.StartManager(mgr, func() bool {
			_, err := reg.Resolve("compute-a")
			return err == nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	return e
}

// create creates obj on c and deletes it when the test ends.
func create(t *testing.T, c *testenv.Cluster, obj client.Object) {
	t.Helper()
	if err := c.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), obj) })
}

// newCentral creates a central on the management cluster whose Southbound
// is externally reachable, and publishes its addresses and client Secret
// through the status subresource, as its controller would.
func newCentral(t *testing.T, name string) *ovnv1alpha1.OVNCentral {
	t.Helper()
	c := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	c.Spec.Southbound.ExternallyReachable = true
	create(t, env.Management, c)
	c.Status.Southbound.InternalDBAddress = "ssl:10.96.0.10:6642"
	c.Status.Southbound.DBAddress = "ssl:192.0.2.10:30651"
	c.Status.ClientSecretName = name + "-client"
	if err := env.Management.Client.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// newChassis creates a chassis of central on cluster ("" for the
// management cluster) and publishes its client Secret's name.
func newChassis(t *testing.T, name, central, cluster string) {
	t.Helper()
	c := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	c.Spec.CentralRef.Name = central
	c.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
	c.Spec.Tolerations = []corev1.Toleration{{Key: "hypervisor", Operator: corev1.TolerationOpExists}}
	if cluster != "" {
		c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	}
	create(t, env.Management, c)
	c.Status.ClientSecretName = name + "-ovn-client"
	if err := env.Management.Client.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// newAgent creates an agent of chassis placed on compute-a, naming the
// shared secret's copy; mutate, when set, changes it first.
func newAgent(t *testing.T, name, chassis string, mutate func(*neutronv1alpha1.NeutronMetadataAgent)) *neutronv1alpha1.NeutronMetadataAgent {
	t.Helper()
	a := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	a.Spec.OpenStackRelease = "2026.1"
	a.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	a.Spec.ChassisRef.Name = chassis
	a.Spec.NovaMetadata.SharedSecretRef = &neutronv1alpha1.SecretKeyRef{Name: mirrorName}
	a.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	if mutate != nil {
		mutate(a)
	}
	if err := env.Management.Client.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	// Deleted and waited for, so that a later test never meets a
	// teardown still running: an agent's teardown reaps its copy.
	t.Cleanup(func() {
		_ = env.Management.Client.Delete(context.Background(), a)
		waitGone(t, a)
	})
	return a
}

// waitAgent waits until the agent's condition has the reason for its
// current generation, and returns the agent.
func waitAgent(t *testing.T, name, condType, reason string) *neutronv1alpha1.NeutronMetadataAgent {
	t.Helper()
	a := &neutronv1alpha1.NeutronMetadataAgent{}
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		last = apimeta.FindStatusCondition(a.Status.Conditions, condType)
		return last != nil && last.Reason == reason && last.ObservedGeneration == a.Generation, nil
	})
	if err != nil {
		t.Fatalf("agent %s: %s never became %s (last %+v)", name, condType, reason, last)
	}
	return a
}

// waitGone waits until obj no longer exists on the management cluster.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := env.Management.Client.Get(ctx, key, obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("%s is still there", key)
	}
}

// eventually retries f for up to 30 seconds and fails the test with its
// last error.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var last error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if last = f(); last == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, last)
}
