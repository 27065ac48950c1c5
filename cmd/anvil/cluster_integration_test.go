package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/kubeconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 1}, &env))
}

// adminKubeconfig writes a kubeconfig with the contexts "mgmt" and
// "compute-a", as an administrator of both clusters would have.
func adminKubeconfig(t *testing.T, e *testenv.Environment) string {
	t.Helper()
	var entries []kubeconfig.Entry
	for _, c := range []*testenv.Cluster{e.Management, e.ComputeCluster("compute-a")} {
		kc, err := clientcmd.LoadFromFile(c.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, kubeconfig.Entry{Context: c.Name, Config: kc})
	}
	merged, err := kubeconfig.Merge(entries)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// registeredToken reads the bearer token out of a registration Secret's
// kubeconfig; the test only compares it, never prints it.
func registeredToken(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	kc, err := clientcmd.Load(s.Data[targetcluster.KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		return ai.Token
	}
	t.Fatal("the registration's kubeconfig holds no user")
	return ""
}

// The access chart on a compute cluster plus `anvil cluster register` give
// a registration Secret the registry engages, scoped to the chart's
// namespaces and limited to the chart's permissions.
func TestIntegrationClusterRegisterProducesAWorkingRegistration(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	compute := e.ComputeCluster("compute-a")

	objs, err := testenv.RenderChart("charts/target-cluster-access", "target-cluster-access", "c5c3-access",
		"--set", "namespaces={openstack}", "--set", "privilegedNamespaces={openstack}", "--set", "createNamespaces=true")
	if err != nil {
		t.Fatal(err)
	}
	if err := compute.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c5c3-access"}}); err != nil {
		t.Fatal(err)
	}
	if err := compute.Apply(ctx, objs); err != nil {
		t.Fatal(err)
	}
	kc := adminKubeconfig(t, e)
	register := func(name string) (string, error) {
		return runAnvil(t, "cluster", "register", "--kubeconfig", kc, "--context", "compute-a",
			"--management-context", "mgmt", "--name", name, "--namespaces", "openstack")
	}

	out, err := register("edge-1")
	if err != nil {
		t.Fatalf("register: %v\n%s", err, out)
	}
	if !strings.Contains(out, "c5c3-clusters/edge-1 created") || !strings.Contains(out, "token expires") {
		t.Errorf("output = %q", out)
	}
	secret := &corev1.Secret{}
	readRegistration := func() {
		t.Helper()
		if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: e.ClustersNamespace, Name: "edge-1"}, secret); err != nil {
			t.Fatal(err)
		}
	}
	readRegistration()
	token := registeredToken(t, secret)
	if token == "" || strings.Contains(out, token) {
		t.Fatalf("the token is empty or was printed")
	}
	if secret.Labels[targetcluster.RegistrationLabel] != "true" || string(secret.Data[targetcluster.NamespacesKey]) != "openstack" {
		t.Errorf("registration Secret labels %v, namespaces %q", secret.Labels, secret.Data[targetcluster.NamespacesKey])
	}
	// The chart made no token Secret: the token is a bound one.
	if err := compute.Client.Get(ctx, client.ObjectKey{Namespace: "c5c3-access", Name: "target-cluster-access-token"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a long-lived token Secret exists on the compute cluster: %v", err)
	}

	// --refresh renews the token and keeps the namespaces it was not given.
	out, err = runAnvil(t, "cluster", "register", "--kubeconfig", kc, "--context", "compute-a",
		"--management-context", "mgmt", "--name", "edge-1", "--refresh", "--token-expiration", "1h")
	if err != nil || !strings.Contains(out, "edge-1 updated") {
		t.Fatalf("refresh: %q, %v", out, err)
	}
	readRegistration()
	if renewed := registeredToken(t, secret); renewed == token || strings.Contains(out, renewed) {
		t.Error("the refresh kept the old token or printed the new one")
	}
	token = registeredToken(t, secret)
	if got := string(secret.Data[targetcluster.NamespacesKey]); got != "openstack" {
		t.Errorf("the refresh changed the namespaces to %q", got)
	}
	// A refresh never makes a registration.
	if out, err := runAnvil(t, "cluster", "register", "--kubeconfig", kc, "--context", "compute-a",
		"--management-context", "mgmt", "--name", "edge-9", "--refresh"); err == nil || !strings.Contains(err.Error(), "no registration Secret") {
		t.Errorf("refreshing a registration that does not exist: %q, %v", out, err)
	}

	// It never overwrites a Secret that is not a registration.
	taken := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: e.ClustersNamespace},
		Data:       map[string][]byte{"kubeconfig": []byte("someone else's")},
	}
	if err := e.Management.Client.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	if out, err := register("taken"); err == nil || !strings.Contains(err.Error(), "taken") || strings.Contains(out+err.Error(), token) {
		t.Errorf("registering over an unlabelled Secret: %q, %v", out, err)
	}
	if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(taken), taken); err != nil || string(taken.Data["kubeconfig"]) != "someone else's" {
		t.Errorf("the unlabelled Secret was changed: %v", err)
	}

	// The registry engages the Secret; the credential works inside the
	// chart's namespaces and nowhere else.
	remote := engage(ctx, t, e, "edge-1")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-by-anvil", Namespace: testenv.WorkloadNamespace}}
	if err := remote.Client.Create(ctx, cm); err != nil {
		t.Errorf("writing into openstack with the registered credential: %v", err)
	}
	if err := remote.Reader.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets in kube-system: err = %v, want Forbidden", err)
	}
	if err := remote.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "x"}, &corev1.ConfigMap{}); err == nil ||
		!strings.Contains(err.Error(), "unknown namespace for the cache") {
		t.Errorf("a cached read outside the scope: err = %v", err)
	}
}

// engage runs a registry against the management cluster until the named
// registration resolves.
func engage(ctx context.Context, t *testing.T, e *testenv.Environment, name string) *targetcluster.Remote {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(e.Management.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := targetcluster.New(mgr, targetcluster.Options{Namespace: e.ClustersNamespace, AllowClusterWide: true})
	if err := reg.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() { _ = mgr.Start(mgrCtx) }()
	var remote *targetcluster.Remote
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		remote, err = reg.Resolve(name)
		return err == nil, nil
	})
	if err != nil {
		_, why := reg.Resolve(name)
		t.Fatalf("the registry never engaged %s: %v", name, why)
	}
	return remote
}

// installAccessChart renders the access chart as release into its own
// namespace on compute-a and applies it, as `helm install` would.
func installAccessChart(ctx context.Context, t *testing.T, e *testenv.Environment, release string, values ...string) {
	t.Helper()
	compute := e.ComputeCluster("compute-a")
	objs, err := testenv.RenderChart("charts/target-cluster-access", release, release, values...)
	if err != nil {
		t.Fatal(err)
	}
	if err := compute.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: release}}); err != nil {
		t.Fatal(err)
	}
	if err := compute.Apply(ctx, objs); err != nil {
		t.Fatal(err)
	}
}

// setEnforce sets, or with level "" removes, a namespace's Pod Security
// enforce label on compute-a, as `kubectl label` would.
func setEnforce(ctx context.Context, t *testing.T, e *testenv.Environment, namespace, level string) {
	t.Helper()
	c := e.ComputeCluster("compute-a").Client
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if level == "" {
		delete(ns.Labels, "pod-security.kubernetes.io/enforce")
	} else {
		ns.Labels["pod-security.kubernetes.io/enforce"] = level
	}
	if err := c.Patch(ctx, ns, patch); err != nil {
		t.Fatal(err)
	}
}

// register refuses namespaces that lack the Pod Security level the access
// chart would have set, judged by what the chart's account may really do
// there, writes nothing when it refuses, and registers with a warning when
// told to.
func TestIntegrationClusterRegisterChecksPodSecurityLabels(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	compute := e.ComputeCluster("compute-a")

	// Namespaces that exist before the chart: it neither creates nor
	// labels them. team-y was labelled privileged by hand.
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-x"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-y", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}},
	} {
		if err := compute.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	installAccessChart(ctx, t, e, "team-access", "--set", "namespaces={team-x,team-y}", "--set", "createNamespaces=false")
	kc := adminKubeconfig(t, e)
	register := func(args ...string) (string, error) {
		return runAnvil(t, append([]string{"cluster", "register", "--kubeconfig", kc, "--context", "compute-a",
			"--management-context", "mgmt", "--name", "team-edge", "--namespaces", "team-x,team-y",
			"--access-namespace", "team-access"}, args...)...)
	}
	registered := func() bool {
		t.Helper()
		err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: e.ClustersNamespace, Name: "team-edge"}, &corev1.Secret{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	out, err := register()
	if err == nil {
		t.Fatalf("register accepted unlabelled namespaces: %s", out)
	}
	for _, want := range []string{
		"namespace team-x has no pod-security.kubernetes.io/enforce label",
		"kubectl label --overwrite namespace team-x pod-security.kubernetes.io/enforce=baseline",
		"namespace team-y has pod-security.kubernetes.io/enforce=privileged",
		"does not treat it as privileged",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if registered() {
		t.Error("a refused registration wrote its Secret")
	}

	out, err = register("--allow-unlabelled-namespaces")
	if err != nil || !strings.Contains(out, "warning: namespace team-x") || !strings.Contains(out, "warning: namespace team-y") ||
		!strings.Contains(out, "team-edge created") {
		t.Fatalf("register --allow-unlabelled-namespaces: %q, %v", out, err)
	}

	// Labelled as the error says, the namespaces pass without the override.
	setEnforce(ctx, t, e, "team-x", "baseline")
	setEnforce(ctx, t, e, "team-y", "restricted")
	if out, err := register(); err != nil || strings.Contains(out, "warning") {
		t.Fatalf("register after labelling: %q, %v", out, err)
	}

	// Where the chart grants DaemonSets, the namespace must keep the
	// privileged level the chart gave it.
	installAccessChart(ctx, t, e, "node-access", "--set", "namespaces={team-p}", "--set", "privilegedNamespaces={team-p}")
	registerNodes := func() (string, error) {
		return runAnvil(t, "cluster", "register", "--kubeconfig", kc, "--context", "compute-a", "--management-context", "mgmt",
			"--name", "node-edge", "--namespaces", "team-p", "--access-namespace", "node-access")
	}
	if out, err := registerNodes(); err != nil {
		t.Fatalf("registering the chart's privileged namespace: %q, %v", out, err)
	}
	setEnforce(ctx, t, e, "team-p", "")
	if _, err := registerNodes(); err == nil ||
		!strings.Contains(err.Error(), "namespace team-p is one of the access chart's privileged namespaces") ||
		!strings.Contains(err.Error(), "kubectl label --overwrite namespace team-p pod-security.kubernetes.io/enforce=privileged") {
		t.Errorf("registering a privileged namespace without its label: %v", err)
	}
}
