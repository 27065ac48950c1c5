package charts_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/config/crd"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// probeVerbs are the verbs asked about for every resource: the ordinary
// ones and those that raise privileges.
var probeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
	"escalate", "bind", "impersonate", "approve", "sign", "use"}

// probe is one question to the apiserver's authorizer.
type probe struct {
	namespace string
	gr        schema.GroupResource
	sub       string
	verb      string
	// name is the object asked about; empty asks about every object.
	name string
}

// key is the probe in expand's "group/resource[/sub]:verb" form.
func (p probe) key() string {
	r := p.gr.Resource
	if p.sub != "" {
		r += "/" + p.sub
	}
	return p.gr.Group + "/" + r + ":" + p.verb
}

// String names the probe in failures.
func (p probe) String() string {
	ns := p.namespace
	if ns == "" {
		ns = "<all namespaces>"
	}
	return p.key() + " in " + ns
}

// allowed asks the apiserver whether the ServiceAccount sa of namespace
// saNamespace may do what p says.
func allowed(ctx context.Context, c client.Client, saNamespace, sa string, p probe) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + saNamespace + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: p.namespace, Group: p.gr.Group, Resource: p.gr.Resource, Subresource: p.sub, Verb: p.verb, Name: p.name,
		},
	}}
	if err := c.Create(ctx, review); err != nil {
		return false, fmt.Errorf("SubjectAccessReview for %s: %w", p, err)
	}
	return review.Status.Allowed, nil
}

// resourceUniverse lists what the probes ask about: every resource the
// apiserver serves, subresources included, and every resource the
// generated role names, served or not. It returns their scope as the
// apiserver reports it, for the served ones.
func resourceUniverse(t *testing.T, env *testenv.Environment) (map[string]bool, map[schema.GroupResource]bool) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Management.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	universe := map[string]bool{} // "group/resource[/sub]"
	served := map[schema.GroupResource]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			universe[gv.Group+"/"+r.Name] = true
			if !strings.Contains(r.Name, "/") {
				served[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = !r.Namespaced
			}
		}
	}
	for _, rule := range generatedRole(t).Rules {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				universe[g+"/"+r] = true
			}
		}
	}
	return universe, served
}

// installCRDs creates CRDs on c and waits until the apiserver serves them,
// so that discovery lists them.
func installCRDs(ctx context.Context, t *testing.T, c *testenv.Cluster, crds []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	sch := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range crds {
		if err := cl.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
				return false, err
			}
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", d.Name, err)
		}
	}
}

// applyChartRBAC creates the chart's ServiceAccount and RBAC objects; the
// rest of the chart needs a running operator or cert-manager.
func applyChartRBAC(ctx context.Context, t *testing.T, c *testenv.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	keep := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	var rbac []*unstructured.Unstructured
	for _, o := range objs {
		if slices.Contains(keep, o.GetKind()) {
			rbac = append(rbac, o)
		}
	}
	if err := c.Apply(ctx, rbac); err != nil {
		t.Fatal(err)
	}
}

// A real apiserver's authorizer, asked about every resource it serves and
// every verb, allows the chart's ServiceAccount nothing that the generated
// role (config/rbac/role.yaml) does not, and allows all of the generated
// role where the operator works. Namespaced resources are never granted
// across all namespaces. The chart is rendered in operator certificate
// mode, whose RBAC is the default's plus two hand-written rules limited by
// name: those grant nothing to a question without a name, so the sweep
// holds for both modes, and checkWebhookCertsGrants asks about them by
// name.
func TestIntegrationOperatorChartRBACGrantsNoMoreThanTheGeneratedRole(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts a kube-apiserver (run without -short)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the test cluster: %v", err)
		}
	})
	c := env.Management
	// The Hypervisor stand-in makes discovery cover the one cluster-scoped
	// custom resource the markers name.
	standIns, err := crd.StandIns()
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(ctx, t, c, standIns)
	watch := []string{testenv.WorkloadNamespace, "ovn"}
	for _, ns := range []string{operatorNamespace, "ovn", "elsewhere"} {
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := testenv.RenderChart(operatorChart, operatorRelease, operatorNamespace,
		"--set", "image.repository="+testRepository, "--set", "watchNamespaces={"+strings.Join(watch, ",")+"}",
		"--set", "clustersNamespace="+env.ClustersNamespace, "--set", "webhook.certificates.mode=operator")
	if err != nil {
		t.Fatal(err)
	}
	applyChartRBAC(ctx, t, c, objs)
	// A ServiceAccount bound to nothing shows what every account may do
	// anyway (discovery, self reviews), which is not the chart's grant.
	if err := c.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "baseline", Namespace: operatorNamespace}}); err != nil {
		t.Fatal(err)
	}

	universe, served := resourceUniverse(t, env)
	t.Run("scopes", func(t *testing.T) { checkScopesAgainstDiscovery(t, served) })

	generated := expand(generatedRole(t).Rules)
	namespaces := append(slices.Clone(watch), operatorNamespace, env.ClustersNamespace, "elsewhere", "")
	var probes []probe
	for res := range universe {
		group, resource, _ := strings.Cut(res, "/")
		name, sub, _ := strings.Cut(resource, "/")
		gr := schema.GroupResource{Group: group, Resource: name}
		for _, ns := range namespaces {
			if cluster, ok := served[gr]; ok && cluster && ns != "" {
				continue // a namespace means nothing to a cluster-scoped resource
			}
			for _, v := range probeVerbs {
				probes = append(probes, probe{namespace: ns, gr: gr, sub: sub, verb: v})
			}
		}
	}
	granted := ask(ctx, t, c.Client, probes)

	for _, p := range probes {
		if !granted[p] {
			continue
		}
		if !generated[p.key()] {
			t.Errorf("the chart allows %s, which config/rbac/role.yaml does not grant", p)
		}
		if cluster, ok := served[p.gr]; p.namespace == "" && (!ok || !cluster) {
			t.Errorf("the chart allows %s: a namespaced resource across every namespace", p)
		}
		if p.gr == (schema.GroupResource{Resource: "secrets"}) && !slices.Contains(watch, p.namespace) && (p.namespace != env.ClustersNamespace || !slices.Contains([]string{"get", "list", "watch"}, p.verb)) {
			t.Errorf("the chart allows %s: Secrets outside the watched namespaces beyond reading registrations", p)
		}
	}
	checkChartIsEnough(t, granted, watch)
	t.Run("endpoint pins", func(t *testing.T) { checkPinsAccess(ctx, t, c, env.ClustersNamespace) })
	checkWebhookCertsGrants(ctx, t, c.Client)
}

// checkPinsAccess makes, as the chart's ServiceAccount, the requests the
// registry makes for its endpoint pins, and a few it must not be able to
// make. The name-less probes above cannot see a grant limited by
// resourceNames.
func checkPinsAccess(ctx context.Context, t *testing.T, c *testenv.Cluster, namespace string) {
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + operatorNamespace + ":" + operatorRelease,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
	}
	sa, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := client.FieldOwner("chart-rbac-test")
	pin := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+targetcluster.PinAnnotation("compute-a")+`":"0123456789abcdef"}}}`))
	clusters := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := sa.Patch(ctx, clusters, pin, owner); err != nil {
		t.Errorf("setting a pin on the clusters Namespace: %v", err)
	}
	if err := sa.Get(ctx, client.ObjectKeyFromObject(clusters), &corev1.Namespace{}); err != nil {
		t.Errorf("reading the clusters Namespace: %v", err)
	}
	legacy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: targetcluster.EndpointPinsConfigMap}}
	if err := c.Client.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	if err := sa.Get(ctx, client.ObjectKeyFromObject(legacy), &corev1.ConfigMap{}); err != nil {
		t.Errorf("reading the legacy pins: %v", err)
	}
	refused := map[string]error{
		"patch another Namespace":   sa.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, pin, owner),
		"update the Namespace":      sa.Update(ctx, clusters),
		"delete the Namespace":      sa.Delete(ctx, clusters),
		"patch the legacy pins":     sa.Patch(ctx, legacy, client.RawPatch(types.MergePatchType, []byte(`{"data":{"compute-a":"x"}}`)), owner),
		"delete the legacy pins":    sa.Delete(ctx, legacy),
		"create another ConfigMap":  sa.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "other"}}),
		"apply another ConfigMap":   sa.Apply(ctx, corev1ac.ConfigMap("other", namespace), owner),
		"pins in another namespace": sa.Apply(ctx, corev1ac.ConfigMap(legacy.Name, "elsewhere"), owner),
	}
	for what, err := range refused {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as the operator: %v, want Forbidden", what, err)
		}
	}
}

// checkWebhookCertsGrants asks, by name, what operator mode grants on the
// webhook Secret and the webhook configuration: exactly what the operator
// uses on those two, and nothing on any other Secret or configuration.
func checkWebhookCertsGrants(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	secrets := schema.GroupResource{Resource: "secrets"}
	configs := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}
	const secret, config = operatorRelease + "-webhook-tls", operatorRelease
	want := map[probe]bool{}
	for _, v := range probeVerbs {
		want[probe{namespace: operatorNamespace, gr: secrets, verb: v, name: secret}] = slices.Contains([]string{"get", "list", "watch", "update"}, v)
		want[probe{namespace: operatorNamespace, gr: secrets, verb: v, name: "another"}] = false
		want[probe{gr: configs, verb: v, name: config}] = slices.Contains([]string{"get", "list", "watch", "patch"}, v)
		want[probe{gr: configs, verb: v, name: "another"}] = false
	}
	for p, w := range want {
		got, err := allowed(ctx, c, operatorNamespace, operatorRelease, p)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("%s named %s: allowed=%v, want %v", p, p.name, got, w)
		}
	}
}

// ask sends the probes from a few goroutines and returns those the chart's
// ServiceAccount is allowed and the baseline account is not.
func ask(ctx context.Context, t *testing.T, c client.Client, probes []probe) map[probe]bool {
	t.Helper()
	var mu sync.Mutex
	granted := map[probe]bool{}
	work := make(chan probe)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range work {
				chart, err := allowed(ctx, c, operatorNamespace, operatorRelease, p)
				base := false
				if err == nil && chart {
					base, err = allowed(ctx, c, operatorNamespace, "baseline", p)
				}
				if err != nil {
					t.Error(err)
					continue
				}
				if chart && !base {
					mu.Lock()
					granted[p] = true
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range probes {
		work <- p
	}
	close(work)
	wg.Wait()
	t.Logf("%d authorization probes, %d granted by the chart", len(probes), len(granted))
	return granted
}

// checkScopesAgainstDiscovery holds the generator's scope table to what the
// apiserver says, for every resource it serves.
func checkScopesAgainstDiscovery(t *testing.T, served map[schema.GroupResource]bool) {
	known := scopes(t)
	for gr, cluster := range known {
		got, ok := served[gr]
		if !ok {
			continue // not served here, e.g. cert-manager's kinds
		}
		if got != cluster {
			t.Errorf("scope of %s: the generator says cluster=%v, the apiserver says cluster=%v", gr, cluster, got)
		}
	}
}

// checkChartIsEnough fails when a grant of the generated role is missing
// where the operator needs it: cluster-scoped resources cluster-wide, the
// Lease in the release namespace, the rest in every watched namespace.
func checkChartIsEnough(t *testing.T, granted map[probe]bool, watch []string) {
	t.Helper()
	split := splitRules(t, generatedRole(t))
	need := func(rules []rbacv1.PolicyRule, namespaces ...string) {
		for _, rule := range rules {
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					name, sub, _ := strings.Cut(r, "/")
					for _, v := range rule.Verbs {
						for _, ns := range namespaces {
							p := probe{namespace: ns, gr: schema.GroupResource{Group: g, Resource: name}, sub: sub, verb: v}
							if !granted[p] {
								t.Errorf("the chart does not allow %s, which the operator needs", p)
							}
						}
					}
				}
			}
		}
	}
	need(split.ClusterRules, "")
	need(split.LeaderElectionRules, operatorNamespace)
	need(split.NamespacedRules, watch...)
}
