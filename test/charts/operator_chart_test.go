package charts_test

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/anvil/anvil/internal/targetcluster"
)

const (
	// operatorNamespace is where the operator tests install the chart.
	operatorNamespace = "anvil-system"
	// operatorRelease names the release; the objects are then named
	// "anvil-operator".
	operatorRelease = "anvil-operator"
	// testRepository is a repository for renders; the chart requires one.
	testRepository = "registry.example/anvil/anvil-operator"
)

// renderOperator renders the operator chart with a repository set and
// args, failing the test if helm fails.
func renderOperator(t *testing.T, args ...string) rendered {
	t.Helper()
	full := append([]string{"template", operatorRelease, operatorChart, "--namespace", operatorNamespace,
		"--set", "image.repository=" + testRepository}, args...)
	stdout, stderr, err := helm(t, full...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(full, " "), err, stderr)
	}
	return decode(t, stdout)
}

// operatorVariants are value sets every RBAC check runs against: the
// defaults, every optional object on, the operator's own certificates, and
// several namespaces.
var operatorVariants = map[string][]string{
	"defaults": nil,
	"everything on": {"--set", "networkPolicy.enabled=true", "--set", "serviceMonitor.enabled=true",
		"--set", "podDisruptionBudget.enabled=true", "--set", "replicas=2",
		"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboard.enabled=true",
		"--set", "metrics.readers[0].kind=ServiceAccount,metrics.readers[0].name=prometheus,metrics.readers[0].namespace=monitoring"},
	"operator certificates":  {"--set", "webhook.certificates.mode=operator"},
	"three namespaces":       {"--set", "watchNamespaces={openstack,ovn,tenant-a}"},
	"no compute clusters":    {"--set", "clustersNamespace="},
	"no leader election":     {"--set", "leaderElection.enabled=false"},
	"no webhooks, metrics":   {"--set", "webhook.enabled=false", "--set", "metrics.enabled=false"},
	"existing issuer":        {"--set", "webhook.certificates.certManager.issuerRef.kind=ClusterIssuer,webhook.certificates.certManager.issuerRef.name=ca"},
	"allowed repositories":   {"--set", "allowedImageRepositories={registry.example/nova/}"},
	"custom service account": {"--set", "serviceAccount.name=anvil"},
}

// forbiddenVerbs let a holder grant or assume more than it holds.
var forbiddenVerbs = []string{"*", "escalate", "bind", "impersonate"}

// checkNoWildcard reports a wildcard or a privilege-raising verb in rules.
func checkNoWildcard(t *testing.T, where string, rules []rbacv1.PolicyRule) {
	t.Helper()
	for _, rule := range rules {
		for _, v := range forbiddenVerbs {
			if slices.Contains(rule.Verbs, v) {
				t.Errorf("%s grants %q: %+v", where, v, rule)
			}
		}
		for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs} {
			for _, s := range field {
				if strings.Contains(s, "*") {
					t.Errorf("%s uses a wildcard: %+v", where, rule)
				}
			}
		}
	}
}

func TestOperatorChartRBACHasNoWildcardAndNoClusterWideSecret(t *testing.T) {
	known := scopes(t)
	for name, args := range operatorVariants {
		t.Run(name, func(t *testing.T) {
			objs := renderOperator(t, args...)
			if len(objs.ofKind("ClusterRole")) == 0 || len(objs.ofKind("Role")) == 0 {
				t.Fatalf("no ClusterRole or no Role rendered")
			}
			for _, o := range objs.ofKind("ClusterRole") {
				cr := convert[rbacv1.ClusterRole](t, o)
				checkNoWildcard(t, "ClusterRole "+cr.Name, cr.Rules)
				for _, rule := range cr.Rules {
					if slices.Contains(rule.Resources, "secrets") {
						t.Errorf("ClusterRole %s reaches Secrets in every namespace: %+v", cr.Name, rule)
					}
					// A namespaced resource in a ClusterRole is granted in
					// every namespace; only cluster-scoped ones belong here.
					for _, g := range rule.APIGroups {
						for _, r := range rule.Resources {
							gr := schema.GroupResource{Group: g, Resource: strings.SplitN(r, "/", 2)[0]}
							if cluster, ok := known[gr]; !ok || !cluster {
								t.Errorf("ClusterRole %s grants %s, which is not cluster-scoped", cr.Name, gr)
							}
						}
					}
				}
			}
			for _, o := range objs.ofKind("Role") {
				role := convert[rbacv1.Role](t, o)
				checkNoWildcard(t, "Role "+role.Namespace+"/"+role.Name, role.Rules)
			}
		})
	}
}

// Roles land only where the operator works: the watch namespaces, the
// release namespace (its Lease) and the clusters namespace (registrations).
func TestOperatorChartRolesOnlyWhereTheOperatorWorks(t *testing.T) {
	objs := renderOperator(t, "--set", "watchNamespaces={openstack,ovn}", "--set", "clustersNamespace=c5c3-clusters")
	want := map[string][]string{
		"openstack":       {"anvil-operator"},
		"ovn":             {"anvil-operator"},
		operatorNamespace: {"anvil-operator-leader-election"},
		"c5c3-clusters":   {"anvil-operator-registrations"},
	}
	got := map[string][]string{}
	for _, o := range objs.ofKind("Role") {
		got[o.GetNamespace()] = append(got[o.GetNamespace()], o.GetName())
	}
	if len(got) != len(want) {
		t.Errorf("Roles in %v, want in %v", got, want)
	}
	for ns, names := range want {
		if !slices.Equal(got[ns], names) {
			t.Errorf("Roles in %s: %v, want %v", ns, got[ns], names)
		}
		rb := convert[rbacv1.RoleBinding](t, objs.get(t, "RoleBinding", ns, names[0]))
		if rb.RoleRef.Name != names[0] || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "anvil-operator" || rb.Subjects[0].Namespace != operatorNamespace {
			t.Errorf("RoleBinding %s/%s: roleRef %+v subjects %+v", ns, names[0], rb.RoleRef, rb.Subjects)
		}
	}

	// The registry only reads registration Secrets.
	reg := convert[rbacv1.Role](t, objs.get(t, "Role", "c5c3-clusters", "anvil-operator-registrations"))
	if got := verbsFor(reg.Rules, "", "secrets"); !slices.Equal(got, sorted([]string{"get", "list", "watch"})) {
		t.Errorf("registration Secrets verbs %v, want read only", got)
	}
	// It reads the legacy endpoint pins ConfigMap, by name, and writes no
	// ConfigMap.
	var pins []rbacv1.PolicyRule
	for _, rule := range reg.Rules {
		if slices.Contains(rule.Resources, "configmaps") {
			pins = append(pins, rule)
		}
	}
	if len(pins) != 1 || !slices.Equal(pins[0].ResourceNames, []string{targetcluster.EndpointPinsConfigMap}) ||
		!slices.Equal(pins[0].Verbs, []string{"get"}) {
		t.Errorf("ConfigMap rules in the clusters namespace %+v, want get on %s only", pins, targetcluster.EndpointPinsConfigMap)
	}
	// Its one write outside Events is the pin annotation of the clusters
	// Namespace, limited to that Namespace by name.
	var nsWrites []rbacv1.PolicyRule
	for _, rule := range convert[rbacv1.ClusterRole](t, objs.get(t, "ClusterRole", "", "anvil-operator")).Rules {
		if slices.Contains(rule.Resources, "namespaces") && !slices.Equal(rule.Verbs, []string{"get"}) {
			nsWrites = append(nsWrites, rule)
		}
	}
	if len(nsWrites) != 1 || !slices.Equal(nsWrites[0].ResourceNames, []string{"c5c3-clusters"}) || !slices.Equal(nsWrites[0].Verbs, []string{"patch"}) {
		t.Errorf("the ClusterRole writes Namespaces with %+v, want patch on c5c3-clusters only", nsWrites)
	}
	for _, rule := range reg.Rules {
		if !slices.Contains(rule.Resources, "secrets") && !slices.Contains(rule.Resources, "configmaps") && !slices.Contains(rule.Resources, "events") {
			t.Errorf("the clusters namespace's Role grants more than registrations, pins and events: %+v", rule)
		}
	}
	// The Lease is granted only next to the operator.
	for _, ns := range []string{"openstack", "ovn", "c5c3-clusters"} {
		role := convert[rbacv1.Role](t, objs.get(t, "Role", ns, want[ns][0]))
		if v := verbsFor(role.Rules, "coordination.k8s.io", "leases"); len(v) > 0 {
			t.Errorf("Role in %s grants %v on leases", ns, v)
		}
	}
}

// expand lists every (group, resource, verb) a rule set grants, as
// "group/resource:verb".
func expand(rules []rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				for _, v := range rule.Verbs {
					out[g+"/"+r+":"+v] = true
				}
			}
		}
	}
	return out
}

// chartRules collects the rules of the Roles and ClusterRoles bound to the
// operator's ServiceAccount, leaving out the metrics reader, which is for
// scrapers, and the hand-written rules limited to named objects, which
// TestOperatorChartWebhookCertificatesFromTheOperator checks.
func chartRules(t *testing.T, objs rendered) []rbacv1.PolicyRule {
	t.Helper()
	var rules []rbacv1.PolicyRule
	for _, o := range objs.ofKind("ClusterRole") {
		if !strings.HasSuffix(o.GetName(), "-metrics-reader") {
			rules = append(rules, convert[rbacv1.ClusterRole](t, o).Rules...)
		}
	}
	for _, o := range objs.ofKind("Role") {
		rules = append(rules, convert[rbacv1.Role](t, o).Rules...)
	}
	return slices.DeleteFunc(rules, func(r rbacv1.PolicyRule) bool { return len(r.ResourceNames) > 0 })
}

func TestOperatorChartRBACIsTheGeneratedRoleSplit(t *testing.T) {
	generated := expand(generatedRole(t).Rules)
	for _, mode := range []string{"certManager", "operator"} {
		chart := expand(chartRules(t, renderOperator(t, "--set", "webhook.certificates.mode="+mode)))
		for g := range chart {
			if !generated[g] {
				t.Errorf("%s mode: the chart grants %s, which config/rbac/role.yaml does not", mode, g)
			}
		}
		for g := range generated {
			if !chart[g] {
				t.Errorf("%s mode: the chart drops %s of config/rbac/role.yaml; the operator would be refused", mode, g)
			}
		}
	}
}

func TestOperatorChartMetricsReader(t *testing.T) {
	objs := renderOperator(t, "--set", "metrics.readers[0].kind=ServiceAccount,metrics.readers[0].name=prometheus,metrics.readers[0].namespace=monitoring")
	cr := convert[rbacv1.ClusterRole](t, objs.get(t, "ClusterRole", "", "anvil-operator-metrics-reader"))
	want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if len(cr.Rules) != 1 || !slices.Equal(cr.Rules[0].NonResourceURLs, want[0].NonResourceURLs) || !slices.Equal(cr.Rules[0].Verbs, want[0].Verbs) || len(cr.Rules[0].Resources) > 0 {
		t.Errorf("metrics-reader rules %+v, want %+v", cr.Rules, want)
	}
	crb := convert[rbacv1.ClusterRoleBinding](t, objs.get(t, "ClusterRoleBinding", "", "anvil-operator-metrics-reader"))
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "prometheus" || crb.Subjects[0].Namespace != "monitoring" {
		t.Errorf("metrics-reader subjects %+v", crb.Subjects)
	}
	// Without readers, nobody is bound.
	if n := len(renderOperator(t).ofKind("ClusterRoleBinding")); n != 1 {
		t.Errorf("%d ClusterRoleBindings without readers, want only the operator's", n)
	}
}

func TestOperatorChartSchemaRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown key", []string{"--set", "watchNamespace=openstack"}, "additional properties 'watchNamespace' not allowed"},
		{"no watch namespace", []string{"--set-json", "watchNamespaces=[]"}, "at '/watchNamespaces': minItems"},
		{"invalid namespace", []string{"--set", "watchNamespaces={Open_Stack}"}, "at '/watchNamespaces/0': 'Open_Stack' does not match pattern"},
		{"repeated namespace", []string{"--set", "watchNamespaces={openstack,openstack}"}, "at '/watchNamespaces': items at 0 and 1 are equal"},
		{"invalid clusters namespace", []string{"--set", "clustersNamespace=C5C3"}, "/clustersNamespace"},
		{"short digest", []string{"--set", "image.digest=sha256:abc"}, "at '/image/digest': 'sha256:abc' does not match pattern"},
		{"neither digest nor tag", []string{"--set", "image.digest="}, "at '/image': 'anyOf' failed"},
		{"zero replicas", []string{"--set", "replicas=0"}, "at '/replicas': minimum"},
		{"replicas not a number", []string{"--set", "replicas=two"}, "/replicas"},
		{"unknown certificate mode", []string{"--set", "webhook.certificates.mode=vault"}, "at '/webhook/certificates/mode': value must be one of"},
		{"the removed helm mode", []string{"--set", "webhook.certificates.mode=helm"}, "at '/webhook/certificates/mode': value must be one of"},
		{"CA validity not a duration", []string{"--set", "webhook.certificates.operator.caValidity=2y"}, "/webhook/certificates/operator/caValidity"},
		{"empty serving validity", []string{"--set", "webhook.certificates.operator.certValidity="}, "/webhook/certificates/operator/certValidity"},
		{"extra host with a comma", []string{"--set", "webhook.certificates.operator.extraHosts={a\\,b}"}, "/webhook/certificates/operator/extraHosts/0"},
		{"port out of range", []string{"--set", "metrics.port=70000"}, "at '/metrics/port': maximum"},
		{"leader election not a boolean", []string{"--set", "leaderElection.enabled=yes"}, "/leaderElection/enabled"},
		{"unknown log level", []string{"--set", "logLevel=trace"}, "at '/logLevel': value must be one of"},
		{"extra arg not a flag", []string{"--set", "extraArgs={rm}"}, "at '/extraArgs/0'"},
		{"repository with a comma", []string{"--set", "allowedImageRepositories={a\\,b}"}, "/allowedImageRepositories/0"},
		{"keystone entry with https://", []string{"--set", "allowedKeystoneHosts={https://keystone.example}"}, "at '/allowedKeystoneHosts/0'"},
		{"keystone entry with a path", []string{"--set", "allowedKeystoneHosts={http://keystone.example/v3}"}, "at '/allowedKeystoneHosts/0'"},
		{"clusters namespace is watched", []string{"--set", "clustersNamespace=openstack"}, `values.clustersNamespace "openstack" is also in values.watchNamespaces`},
		{"management cluster id not a label value", []string{"--set", "managementClusterID=prod/eu"}, "at '/managementClusterID'"},
		{"runbook base not a URL", []string{"--set", "monitoring.prometheusRule.runbookBaseURL=docs/runbooks"}, "at '/monitoring/prometheusRule/runbookBaseURL'"},
		{"dashboard namespace invalid", []string{"--set", "monitoring.dashboard.namespace=Grafana"}, "/monitoring/dashboard/namespace"},
		{"unknown monitoring key", []string{"--set", "monitoring.alerts.enabled=true"}, "additional properties 'alerts' not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"template", operatorRelease, operatorChart, "--namespace", operatorNamespace,
				"--set", "image.repository=" + testRepository}, tt.args...)
			stdout, stderr, err := helm(t, args...)
			if err == nil {
				t.Fatalf("helm template succeeded; want a failure. Output:\n%s", stdout)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("error does not contain %q:\n%s", tt.want, stderr)
			}
		})
	}
	t.Run("repository missing", func(t *testing.T) {
		_, stderr, err := helm(t, "template", operatorRelease, operatorChart, "--namespace", operatorNamespace)
		if err == nil || !strings.Contains(stderr, "at '/image/repository'") {
			t.Errorf("rendering without image.repository: %v\n%s", err, stderr)
		}
	})
}

// digestPattern is what a pinned digest looks like.
var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

func TestOperatorChartDeploymentIsRestricted(t *testing.T) {
	objs := renderOperator(t, "--set", "watchNamespaces={openstack,ovn}")
	d := convert[appsv1.Deployment](t, objs.get(t, "Deployment", operatorNamespace, "anvil-operator"))
	pod := d.Spec.Template.Spec
	sa := convert[corev1.ServiceAccount](t, objs.get(t, "ServiceAccount", operatorNamespace, "anvil-operator"))
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("the ServiceAccount automounts its token into every pod")
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken || pod.ServiceAccountName != sa.Name {
		t.Errorf("the operator pod does not mount its own account's token")
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("the container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("the root file system is writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation is allowed")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want drop ALL and add none", sc.Capabilities)
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("the container is privileged")
	}
	repo, digest, ok := strings.Cut(c.Image, "@")
	if !ok || repo != testRepository || !digestPattern.MatchString(digest) {
		t.Errorf("image %q, want %s pinned by digest", c.Image, testRepository)
	}
	for _, want := range []string{"--leader-elect=true", "--leader-election-namespace=" + operatorNamespace, "--watch-namespaces=openstack,ovn",
		"--health-probe-bind-address=:8081", "--metrics-bind-address=$(POD_IP):8443", "--webhook-cert-dir=/etc/anvil/webhook-tls"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--management-cluster-id") }) {
		t.Error("the default values set --management-cluster-id; the operator's own default is the kube-system UID")
	}
	if slices.Contains(c.Args, "--require-image-digests") {
		t.Error("the default values require image digests, which the default images lack")
	}
	named := renderOperator(t, "--set", "managementClusterID=prod-eu-1", "--set", "requireImageDigests=true")
	args := convert[appsv1.Deployment](t, named.get(t, "Deployment", operatorNamespace, "anvil-operator")).Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--management-cluster-id=prod-eu-1") || !slices.Contains(args, "--require-image-digests") {
		t.Errorf("managementClusterID or requireImageDigests is not passed on: %v", args)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %+v is not an HTTP probe on the health port", p)
		}
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probe paths %s and %s", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
}

// webhookConfig returns the rendered ValidatingWebhookConfiguration.
func webhookConfig(t *testing.T, objs rendered) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	return convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs.get(t, "ValidatingWebhookConfiguration", "", "anvil-operator"))
}

// checkWebhooksReachTheService checks that the chart registers exactly the
// generated webhooks, all pointing at its Service and limited to the
// watched namespaces.
func checkWebhooksReachTheService(t *testing.T, vwc *admissionregistrationv1.ValidatingWebhookConfiguration, objs rendered) {
	t.Helper()
	var want generatedWebhooks
	if err := yaml.Unmarshal(renderWebhooksFile(t), &want); err != nil {
		t.Fatal(err)
	}
	if len(vwc.Webhooks) != len(want.Webhooks) {
		t.Fatalf("%d webhooks, want the %d generated ones", len(vwc.Webhooks), len(want.Webhooks))
	}
	svc := convert[corev1.Service](t, objs.get(t, "Service", operatorNamespace, "anvil-operator-webhook"))
	for i, w := range vwc.Webhooks {
		ref := w.ClientConfig.Service
		if w.Name != want.Webhooks[i].Name || ref == nil || ref.Name != svc.Name || ref.Namespace != operatorNamespace ||
			ref.Path == nil || *ref.Path != *want.Webhooks[i].ClientConfig.Service.Path {
			t.Errorf("webhook %d: %s -> %+v", i, w.Name, ref)
		}
		if w.NamespaceSelector == nil || len(w.NamespaceSelector.MatchExpressions) != 1 ||
			!slices.Equal(w.NamespaceSelector.MatchExpressions[0].Values, []string{"openstack"}) {
			t.Errorf("webhook %s is not limited to the watched namespaces: %+v", w.Name, w.NamespaceSelector)
		}
	}
}

// generatedWebhooks is files/webhooks.yaml.
type generatedWebhooks struct {
	Webhooks []admissionregistrationv1.ValidatingWebhook `json:"webhooks"`
}

func TestOperatorChartWebhookCertificatesFromCertManager(t *testing.T) {
	objs := renderOperator(t)
	vwc := webhookConfig(t, objs)
	checkWebhooksReachTheService(t, vwc, objs)
	cert := objs.get(t, "Certificate", operatorNamespace, "anvil-operator-webhook")
	if got := vwc.Annotations["cert-manager.io/inject-ca-from"]; got != operatorNamespace+"/"+cert.GetName() {
		t.Errorf("inject-ca-from = %q, want %s/%s", got, operatorNamespace, cert.GetName())
	}
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if !slices.Contains(dnsNames, "anvil-operator-webhook."+operatorNamespace+".svc") {
		t.Errorf("the Certificate's names %v do not cover the Service", dnsNames)
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	objs.get(t, "Issuer", operatorNamespace, issuer)
	checkMountsSecret(t, objs, secretName)
	if len(objs.ofKind("Secret")) != 0 {
		t.Errorf("the chart renders a Secret although cert-manager writes it")
	}
}

// checkMountsSecret fails unless the operator mounts the named Secret as its
// webhook certificate directory.
func checkMountsSecret(t *testing.T, objs rendered, name string) {
	t.Helper()
	d := convert[appsv1.Deployment](t, objs.get(t, "Deployment", operatorNamespace, "anvil-operator"))
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return
		}
	}
	t.Errorf("the Deployment does not mount the Secret %s", name)
}

func TestOperatorChartOptionalObjects(t *testing.T) {
	optional := []string{"NetworkPolicy", "ServiceMonitor", "PodDisruptionBudget", "PrometheusRule"}
	for _, kind := range optional {
		if n := len(renderOperator(t).ofKind(kind)); n != 0 {
			t.Errorf("%d %s rendered by default, want none", n, kind)
		}
	}
	objs := renderOperator(t, operatorVariants["everything on"]...)
	for _, kind := range optional {
		if n := len(objs.ofKind(kind)); n != 1 {
			t.Errorf("%d %s rendered when enabled, want 1", n, kind)
		}
	}
}

// The dashboard's ConfigMap is off by default, carries the sidecar's label
// and lands where the values say; the PrometheusRule takes the labels a
// ruleSelector needs. test/monitoring checks what both contain.
func TestOperatorChartMonitoringObjects(t *testing.T) {
	dashboards := func(objs rendered) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, o := range objs.ofKind("ConfigMap") {
			if o.GetLabels()["grafana_dashboard"] == "1" {
				out = append(out, o)
			}
		}
		return out
	}
	if n := len(dashboards(renderOperator(t))); n != 0 {
		t.Errorf("%d dashboard ConfigMaps by default, want none", n)
	}
	objs := renderOperator(t, "--set", "monitoring.dashboard.enabled=true", "--set", "monitoring.dashboard.namespace=grafana",
		"--set", "monitoring.dashboard.annotations.grafana_folder=Anvil",
		"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.labels.release=prometheus")
	found := dashboards(objs)
	if len(found) != 1 {
		t.Fatalf("%d dashboard ConfigMaps, want 1", len(found))
	}
	cm := convert[corev1.ConfigMap](t, found[0])
	if cm.Namespace != "grafana" || cm.Annotations["grafana_folder"] != "Anvil" || !strings.HasPrefix(cm.Data["anvil-operator.json"], "{") {
		t.Errorf("dashboard ConfigMap %s/%s, annotations %v, data keys %v", cm.Namespace, cm.Name, cm.Annotations, slices.Collect(maps.Keys(cm.Data)))
	}
	rule := objs.get(t, "PrometheusRule", operatorNamespace, "anvil-operator")
	if rule.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule labels %v, want release=prometheus among them", rule.GetLabels())
	}
}

func TestOperatorChartLint(t *testing.T) {
	stdout, stderr, err := helm(t, "lint", "--strict", operatorChart, "--namespace", operatorNamespace,
		"--set", "image.repository="+testRepository)
	if err != nil {
		t.Fatalf("helm lint: %v\n%s%s", err, stdout, stderr)
	}
}

// TestOperatorChartPassesKeystoneHosts: the Keystone list reaches the
// operator as one flag, plain-http entries included, since the devstack's
// ControlPlane declares a loopback Keystone that way.
func TestOperatorChartPassesKeystoneHosts(t *testing.T) {
	objs := renderOperator(t, "--set", "allowedKeystoneHosts={http://127.0.0.1:5000,keystone.example:443}")
	d := convert[appsv1.Deployment](t, objs.get(t, "Deployment", operatorNamespace, "anvil-operator"))
	want := "--allowed-keystone-hosts=http://127.0.0.1:5000,keystone.example:443"
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, want) {
		t.Errorf("args %v lack %s", args, want)
	}
}
