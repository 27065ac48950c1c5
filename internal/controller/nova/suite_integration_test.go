package nova_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/operator"
)

var (
	env     *testenv.Environment
	cloud   *openstacktest.Cloud
	logs    = &testenv.LogBuffer{}
	started sync.Once
)

// TestMain starts the management cluster, and the OpenStack services the
// control plane test runs Nova against. It asks for the reference Nova too:
// that start syncs the shared schemas under the service set's lock, so this
// suite's Jobs never race another package's first sync.
func TestMain(m *testing.M) {
	os.Exit(openstacktest.RunWithNova(&cloud, func() int {
		return testenv.Run(m, testenv.Options{}, &env)
	}))
}

// startOperator runs the operator's controllers and webhooks against the
// management cluster, wired as production wires them, once per package.
// This package has no compute cluster.
func startOperator(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	started.Do(func() {
		mgr, err := e.NewManager(logs)
		if err != nil {
			t.Fatal(err)
		}
		opts := &operator.Options{EnableWebhooks: true, AllowedKeystoneHosts: allowedKeystoneHosts()}
		if _, err := operator.Setup(context.Background(), mgr, opts); err != nil {
			t.Fatal(err)
		}
		if err := testenv.StartManager(mgr, nil); err != nil {
			t.Fatal(err)
		}
	})
	return e
}

// allowedKeystoneHosts are the Keystone hosts this suite's standalone
// Novas name: the made-up ones of newNova, and the local Keystone's
// host:port, so that another port of 127.0.0.1 stays refused.
func allowedKeystoneHosts() []string {
	hosts := []string{"keystone.openstack.svc", "keystone.example.com"}
	if cloud == nil {
		return hosts
	}
	for _, key := range []string{localcloud.KeystoneURL, localcloud.KeystonePublicURL} {
		if entry, ok := keystonepolicy.EntryFor(cloud.Endpoints[key]); ok {
			hosts = append(hosts, entry)
		}
	}
	return hosts
}

// Test credentials. Every one is searched for in the log and the events.
const (
	busURL        = "rabbit://nova:bus-PASSWORD-7f3a@rabbit.openstack.svc:5671/nova"
	remoteBusURL  = "rabbit://nova:remote-PASSWORD-91cc@rabbit.example.com:5671/nova"
	servicePass   = "service-PASSWORD-c0ffee"
	rotatedPass   = "service-PASSWORD-rotated-b4d"
	sharedSecret  = "metadata-SHARED-0ddba11"
	caBundle      = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"
	testNamespace = testenv.WorkloadNamespace
	// dbPass needs every escape of the connection URL; its plain prefix,
	// in credentials, finds it escaped or not.
	dbPass        = "dbpw-PASSWORD-5ca1@:/%$x"
	rotatedDBPass = "dbpw-PASSWORD-rotated-e77"
)

var credentials = []string{busURL, remoteBusURL, servicePass, rotatedPass, sharedSecret, "bus-PASSWORD-7f3a", "remote-PASSWORD-91cc",
	dbPass, rotatedDBPass, "dbpw-PASSWORD-5ca1"}

// inputs creates the input Secrets of a Nova named prefix.
func inputs(t *testing.T, prefix string) {
	t.Helper()
	for name, data := range map[string]map[string]string{
		prefix + "-bus":       {"transport_url": busURL},
		prefix + "-bus-ca":    {"ca.crt": caBundle},
		prefix + "-password":  {"password": servicePass},
		prefix + "-metadata":  {"shared_secret": sharedSecret},
		prefix + "-transport": {"transport_url": remoteBusURL},
	} {
		putSecret(t, name, data)
	}
}

// newNova returns a Nova named name that reads the Secrets of inputs(name),
// with TLS and remoteCompute set.
func newNova(name string) *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.Messaging.SecretRef.Name = name + "-bus"
	n.Spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{CABundleSecretRef: novav1alpha1.CABundleSecretRef{Name: name + "-bus-ca"}}
	n.Spec.KeystoneEndpoint = "http://keystone.openstack.svc:5000"
	n.Spec.KeystonePublicEndpoint = "https://keystone.example.com"
	n.Spec.ServiceUser.SecretRef.Name = name + "-password"
	n.Spec.Region = "RegionOne"
	n.Spec.Metadata.SharedSecretRef.Name = name + "-metadata"
	n.Spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{
		KeystoneEndpoint:      "https://keystone.example.com",
		TransportURLSecretRef: novav1alpha1.TransportURLSecretRef{Name: name + "-transport"},
	}
	return n
}

// waitCondition waits until ComputeConfigReady has the reason and returns it.
func waitCondition(t *testing.T, name, reason string) *metav1.Condition {
	t.Helper()
	return waitConditionOf(t, name, novav1alpha1.ComputeConfigReadyCondition, reason)
}

// waitConditionOf waits until the condition of the type has the reason for
// the current generation, and returns it.
func waitConditionOf(t *testing.T, name, condType, reason string) *metav1.Condition {
	t.Helper()
	return waitConditionWithin(t, name, condType, reason, 30*time.Second)
}

func getNova(t *testing.T, name string) *novav1alpha1.Nova {
	t.Helper()
	n := &novav1alpha1.Nova{}
	if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func getSecret(t *testing.T, name string) (*corev1.Secret, error) {
	t.Helper()
	s := &corev1.Secret{}
	err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, s)
	return s, err
}

func putSecret(tb testing.TB, name string, data map[string]string) {
	tb.Helper()
	env.Management.PutSecret(tb, testNamespace, name, data)
}

// assertNoLeak fails when a test credential appears in the operator log,
// in any event, or in any condition message of any Nova.
func assertNoLeak(t *testing.T) {
	t.Helper()
	texts := append([]string{logs.String()}, env.Management.EventMessages(t)...)
	novas := &novav1alpha1.NovaList{}
	if err := env.Management.Client.List(context.Background(), novas); err != nil {
		t.Fatal(err)
	}
	for _, n := range novas.Items {
		texts = append(texts, testenv.ConditionMessages(n.Status.Conditions)...)
	}
	testenv.AssertNoLeak(t, texts, credentials)
}
