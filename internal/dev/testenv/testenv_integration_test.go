package testenv_test

import (
	"context"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 2}, &env))
}

// registrationClient builds a client for a compute cluster the way the
// operator will: from nothing but its registration Secret on mgmt.
func registrationClient(t *testing.T, e *testenv.Environment, name string) client.Client {
	t.Helper()
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: e.ClustersNamespace, Name: name}
	if err := e.Management.Client.Get(context.Background(), key, secret); err != nil {
		t.Fatalf("reading the registration Secret %s: %v", key, err)
	}
	if got := secret.Labels[targetcluster.RegistrationLabel]; got != "true" {
		t.Fatalf("registration Secret %s has label %q=%q, want \"true\"", key, targetcluster.RegistrationLabel, got)
	}
	raw := secret.Data[targetcluster.KubeconfigKey]
	kc, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatalf("decoding the kubeconfig of %s: %v", name, err)
	}
	for n, cl := range kc.Clusters {
		if cl.CertificateAuthority != "" || len(cl.CertificateAuthorityData) == 0 {
			t.Errorf("cluster entry %s must embed its CA and name no file", n)
		}
	}
	for n, u := range kc.AuthInfos {
		if u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "" {
			t.Errorf("user entry %s names a credential file", n)
		}
		if len(u.ClientCertificateData) == 0 && u.Token == "" {
			t.Errorf("user entry %s carries no credential", n)
		}
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatalf("building a rest config for %s: %v", name, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("building a client for %s: %v", name, err)
	}
	return c
}

func TestIntegrationRegistrationSecretsReachOnlyTheirOwnCluster(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	if len(e.Compute) != 2 {
		t.Fatalf("want 2 compute clusters, got %d", len(e.Compute))
	}

	clients := map[string]client.Client{}
	for _, c := range e.Compute {
		clients[c.Name] = registrationClient(t, e, c.Name)
	}

	// Each cluster gets a marker object named after itself, written through
	// the registration client.
	for name, c := range clients {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "marker-" + name, Namespace: testenv.WorkloadNamespace},
			Data:       map[string]string{"cluster": name},
		}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatalf("writing the marker onto %s: %v", name, err)
		}
	}

	for name, c := range clients {
		for other := range clients {
			got := &corev1.ConfigMap{}
			err := c.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: "marker-" + other}, got)
			switch {
			case other == name && err != nil:
				t.Errorf("%s cannot read its own marker: %v", name, err)
			case other == name && got.Data["cluster"] != name:
				t.Errorf("%s reads marker data %v", name, got.Data)
			case other != name && !apierrors.IsNotFound(err):
				t.Errorf("%s sees the marker of %s (err %v): clusters are not isolated", name, other, err)
			}
		}
		// The registration client must reach the compute cluster, not mgmt:
		// mgmt has the clusters namespace, compute clusters do not.
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: e.ClustersNamespace}, ns); !apierrors.IsNotFound(err) {
			t.Errorf("%s's registration client sees namespace %s of mgmt (err %v)", name, e.ClustersNamespace, err)
		}
	}

	// Every cluster has the workload namespace.
	for _, c := range append([]*testenv.Cluster{e.Management}, e.Compute...) {
		if err := c.Client.Get(ctx, client.ObjectKey{Name: testenv.WorkloadNamespace}, &corev1.Namespace{}); err != nil {
			t.Errorf("%s lacks namespace %s: %v", c.Name, testenv.WorkloadNamespace, err)
		}
	}
}

func TestIntegrationWorkloadsRunDaemonSetPodsOnFakeNodes(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := e.ComputeCluster("compute-a")

	nodes := []testenv.Node{
		{Name: "compute-a-node-1", Labels: map[string]string{"topology.kubernetes.io/zone": "zone-1", "role": "hv"}},
		{Name: "compute-a-node-2", Labels: map[string]string{"topology.kubernetes.io/zone": "zone-2", "role": "hv"}},
	}
	if err := c.StartWorkloads(ctx, nodes...); err != nil {
		t.Fatalf("starting workloads: %v (logs: %v)", err, c.WorkloadLogs())
	}

	labels := map[string]string{"app": "probe"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: testenv.WorkloadNamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"role": "hv"},
					Containers:   []corev1.Container{{Name: "probe", Image: "example.invalid/probe:1"}},
				},
			},
		},
	}
	if err := c.Client.Create(ctx, ds); err != nil {
		t.Fatalf("creating the DaemonSet: %v", err)
	}

	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace(testenv.WorkloadNamespace), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running[p.Spec.NodeName] = true
			}
		}
		return running["compute-a-node-1"] && running["compute-a-node-2"], nil
	})
	if err != nil {
		t.Fatalf("DaemonSet pods did not run on both fake nodes: %v (logs: %v)", err, c.WorkloadLogs())
	}

	// compute-b runs no workloads, so nothing there is affected.
	nodesB := &corev1.NodeList{}
	if err := e.ComputeCluster("compute-b").Client.List(ctx, nodesB); err != nil {
		t.Fatal(err)
	}
	if len(nodesB.Items) != 0 {
		t.Errorf("compute-b has %d nodes; workloads leaked across clusters", len(nodesB.Items))
	}
}
