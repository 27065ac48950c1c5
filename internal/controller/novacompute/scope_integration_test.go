package novacompute_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// A registration that lists namespaces lends its cluster to pools of those
// management namespaces only. A pool of another namespace that names it
// stops at NovaReady=False/TargetClusterUnavailable, naming the cluster and
// its own namespace, and writes nothing on that cluster; deleting it is not
// held up by the cluster it was never allowed to use.
func TestIntegrationPoolNamespaceNotListedByTheRegistration(t *testing.T) {
	e := startStack(t)
	ctx := t.Context()
	m := e.Management
	const prefix = "scoped"
	cluster, nova, pool := prefix+"-"+run, prefix+"-nova", prefix+"-pool"

	raw, err := e.ComputeCluster("compute-a").RegistrationKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	reg := targetcluster.BuildRegistrationSecret(cluster, e.ClustersNamespace, raw, "elsewhere")
	if err := m.Client.Create(ctx, reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Client.Delete(context.Background(), reg) })

	createHandNova(t, m, nova, cloud.Endpoints[localcloud.KeystoneURL], "nova", "scoped-PASSWORD-"+run)
	newPool(t, e, pool, prefix+"-none", func(p *novav1alpha1.NovaCompute) {
		p.Spec.NovaRef.Name = nova
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
		p.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.1"}
	})
	t.Cleanup(func() {
		_ = m.Client.Delete(context.Background(), &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: ns}})
	})

	eventually(t, 2*time.Minute, "the pool refuses the cluster for its namespace", func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, pool)
		if err != nil {
			return false, err.Error()
		}
		c, msg := conditionOf(p, novav1alpha1.NovaReadyCondition)
		return c != nil && c.Reason == anvilmeta.TargetClusterUnavailableReason &&
			strings.Contains(c.Message, cluster) && strings.Contains(c.Message, "namespace "+ns), msg
	})
	assertNothingOnTheCluster(t, e.ComputeCluster("compute-a").Client, pool)

	deletePool(t, e, pool)
	assertNothingOnTheCluster(t, e.ComputeCluster("compute-a").Client, pool)
}

// createHandNova declares a Nova whose service user is user with password
// at keystoneURL, and publishes a contract for it by hand, so that a pool
// of it gets as far as its cluster and its first Nova call. The Nova is
// created past its webhook, as the suite's operator admits its Keystone.
func createHandNova(t *testing.T, m *testenv.Cluster, name, keystoneURL, user, password string) {
	t.Helper()
	bus := "rabbit://nova:" + name + "-BUS-" + run + "@rabbit.openstack.svc:5672/nova"
	m.PutSecret(t, ns, name+"-bus", map[string]string{"transport_url": bus})
	m.PutSecret(t, ns, name+"-password", map[string]string{"password": password})
	m.PutSecret(t, ns, name+"-metadata", map[string]string{"shared_secret": name + "-SHARED-" + run})
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.KeystoneEndpoint = keystoneURL
	n.Spec.Region = cloud.Endpoints[localcloud.Region]
	n.Spec.ServiceUser.Username = user
	n.Spec.ServiceUser.SecretRef.Name = name + "-password"
	n.Spec.Messaging.SecretRef.Name = name + "-bus"
	n.Spec.Metadata.SharedSecretRef.Name = name + "-metadata"
	restore := m.WithoutWebhook(t, "vnova.openstack.c5c3.io")
	if err := m.Client.Create(t.Context(), n); err != nil {
		t.Fatalf("creating the Nova: %v", err)
	}
	restore()
	t.Cleanup(func() { _ = m.Client.Delete(context.Background(), n) })

	m.PutSecret(t, ns, name+novav1alpha1.ComputeConfigSuffix, map[string]string{
		"nova-compute.conf": "[DEFAULT]\n", "transport_url": bus, "password": password,
	})
	live := &novav1alpha1.Nova{}
	if err := m.Client.Get(t.Context(), client.ObjectKeyFromObject(n), live); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(live.DeepCopy())
	live.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: name + novav1alpha1.ComputeConfigSuffix}
	if err := m.Client.Status().Patch(t.Context(), live, patch); err != nil {
		t.Fatal(err)
	}
}

// assertNothingOnTheCluster fails if the pool left a DaemonSet or a
// contract mirror in its namespace on the compute cluster.
func assertNothingOnTheCluster(t *testing.T, c client.Client, pool string) {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pool}, ds); !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet %s on compute-a: %v", pool, err)
	}
	secrets := &corev1.SecretList{}
	if err := c.List(t.Context(), secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "scoped-") {
			t.Errorf("Secret %s on compute-a", s.Name)
		}
	}
}
