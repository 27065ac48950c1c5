package charts_test

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// accessChart is the chart under test, relative to the repository root.
const accessChart = "charts/target-cluster-access"

// fullVerbs are the verbs of every resource Anvil writes: it applies them
// with server-side apply (patch), creates a few only once, deletes them,
// and its cache lists and watches them. It never updates a whole object.
var fullVerbs = []string{"get", "list", "watch", "create", "patch", "delete"}

// rendered is the output of one helm template run.
type rendered []*unstructured.Unstructured

// render runs helm template on the chart as release "target-cluster-access"
// in the release namespace and fails the test if helm fails.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	return renderRelease(t, "target-cluster-access", args...)
}

// renderRelease is render with a chosen release name.
func renderRelease(t *testing.T, release string, args ...string) rendered {
	t.Helper()
	full := append([]string{"template", release, accessChart, "--namespace", releaseNamespace}, args...)
	stdout, stderr, err := helm(t, full...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(full, " "), err, stderr)
	}
	return decode(t, stdout)
}

// ofKind returns the objects of one kind, in rendering order.
func (r rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// get returns the object of a kind, namespace and name, failing the test if
// there is none.
func (r rendered) get(t *testing.T, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s among the rendered objects", kind, namespace, name)
	return nil
}

// convert turns a rendered object into its typed form.
func convert[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
		t.Fatalf("converting %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

// role returns the typed Role rendered into namespace.
func (r rendered) role(t *testing.T, namespace string) *rbacv1.Role {
	t.Helper()
	return convert[rbacv1.Role](t, r.get(t, "Role", namespace, "target-cluster-access"))
}

// clusterRole returns the typed ClusterRole.
func (r rendered) clusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	return convert[rbacv1.ClusterRole](t, r.get(t, "ClusterRole", "", "target-cluster-access"))
}

// verbsFor collects the verbs rules grant on a resource of an API group.
func verbsFor(rules []rbacv1.PolicyRule, group, resource string) []string {
	var verbs []string
	for _, rule := range rules {
		if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) {
			verbs = append(verbs, rule.Verbs...)
		}
	}
	slices.Sort(verbs)
	return slices.Compact(verbs)
}

// sorted returns a sorted copy, for comparing verb sets.
func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestTargetClusterAccessRefusesInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// want are fragments the error must contain.
		want []string
	}{
		{
			name: "namespaces missing",
			want: []string{"): values.namespaces must name at least one namespace", `registration Secret's "namespaces"`},
		},
		{
			name: "namespaces empty",
			args: []string{"--set-json", "namespaces=[]"},
			want: []string{"): values.namespaces must name at least one namespace"},
		},
		{
			name: "namespaces not a list",
			args: []string{"--set", "namespaces=openstack"},
			want: []string{"values.namespaces must be a list"},
		},
		{
			name: "namespace with upper case and underscore",
			args: []string{"--set", "namespaces={openstack,Open_Stack}"},
			want: []string{`values.namespaces: "Open_Stack" is not a valid namespace name`, "DNS-1123 label"},
		},
		{
			name: "namespace with a dot",
			args: []string{"--set", "namespaces={open.stack}"},
			want: []string{`"open.stack" is not a valid namespace name`},
		},
		{
			name: "namespace longer than 63 characters",
			args: []string{"--set", "namespaces={" + strings.Repeat("a", 64) + "}"},
			want: []string{`"` + strings.Repeat("a", 64) + `" is not a valid namespace name`},
		},
		{
			name: "namespace listed twice",
			args: []string{"--set", "namespaces={openstack,openstack}"},
			want: []string{`values.namespaces lists "openstack" more than once`},
		},
		{
			name: "release namespace rendered as a Namespace",
			args: []string{"--set", "namespaces={openstack," + releaseNamespace + "}"},
			want: []string{`contains the release namespace "c5c3-access"`},
		},
		{
			name: "privileged namespace not in namespaces",
			args: []string{"--set", "namespaces={openstack}", "--set", "privilegedNamespaces={openstack,ovs}"},
			want: []string{`values.privilegedNamespaces: "ovs" is not listed in values.namespaces`},
		},
		{
			name: "privileged namespaces without createNamespaces",
			args: []string{"--set", "namespaces={openstack}", "--set", "privilegedNamespaces={openstack}", "--set", "createNamespaces=false"},
			want: []string{"values.privilegedNamespaces requires createNamespaces=true"},
		},
		{
			name: "privileged namespaces not a list",
			args: []string{"--set", "namespaces={openstack}", "--set", "privilegedNamespaces=openstack"},
			want: []string{"values.privilegedNamespaces must be a list"},
		},
		{
			name: "createNamespaces not a boolean",
			args: []string{"--set", "namespaces={openstack}", "--set", "createNamespaces=yes"},
			want: []string{"values.createNamespaces must be true or false"},
		},
		{
			name: "hypervisorTraits not a boolean",
			args: []string{"--set", "namespaces={openstack}", "--set", "hypervisorTraits=all"},
			want: []string{"values.hypervisorTraits must be true or false"},
		},
		{
			name: "serviceAccount.name invalid",
			args: []string{"--set", "namespaces={openstack}", "--set", "serviceAccount.name=Anvil_Access"},
			want: []string{`values.serviceAccount.name: "Anvil_Access" is not a valid name`},
		},
		{
			name: "serviceAccount.name empty",
			args: []string{"--set", "namespaces={openstack}", "--set", "serviceAccount.name="},
			want: []string{`values.serviceAccount.name: "" is not a valid name`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"template", "target-cluster-access", accessChart, "--namespace", releaseNamespace}, tt.args...)
			stdout, stderr, err := helm(t, args...)
			if err == nil {
				t.Fatalf("helm template succeeded; want a failure. Output:\n%s", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("error does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestTargetClusterAccessOneRoleAndBindingPerNamespace(t *testing.T) {
	namespaces := []string{"openstack", "ovn", "neutron"}
	objs := render(t, "--set", "namespaces={"+strings.Join(namespaces, ",")+"}")

	if got := len(objs.ofKind("Role")); got != len(namespaces) {
		t.Errorf("%d Roles, want %d", got, len(namespaces))
	}
	if got := len(objs.ofKind("RoleBinding")); got != len(namespaces) {
		t.Errorf("%d RoleBindings, want %d", got, len(namespaces))
	}
	for _, ns := range namespaces {
		objs.role(t, ns)
		rb := convert[rbacv1.RoleBinding](t, objs.get(t, "RoleBinding", ns, "target-cluster-access"))
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "target-cluster-access" || rb.RoleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("RoleBinding in %s refers to %+v", ns, rb.RoleRef)
		}
	}
	// Nothing namespaced may land outside the listed namespaces, except the
	// account itself in the release namespace.
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns != "" && ns != releaseNamespace && !slices.Contains(namespaces, ns) {
			t.Errorf("%s %s is in namespace %s, which is not listed", o.GetKind(), o.GetName(), ns)
		}
	}
}

func TestTargetClusterAccessCreateNamespaces(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCreate bool
	}{
		{name: "default", wantCreate: true},
		{name: "true", args: []string{"--set", "createNamespaces=true"}, wantCreate: true},
		{name: "false", args: []string{"--set", "createNamespaces=false"}, wantCreate: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, append([]string{"--set", "namespaces={openstack,ovn}"}, tt.args...)...)
			nss := objs.ofKind("Namespace")
			if !tt.wantCreate {
				if len(nss) != 0 {
					t.Errorf("%d Namespaces rendered with createNamespaces=false", len(nss))
				}
			} else {
				if len(nss) != 2 {
					t.Fatalf("%d Namespaces rendered, want 2", len(nss))
				}
				for _, name := range []string{"openstack", "ovn"} {
					ns := objs.get(t, "Namespace", "", name)
					if got := ns.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
						t.Errorf("Namespace %s: helm.sh/resource-policy = %q, want keep", name, got)
					}
				}
			}
			// The Roles do not depend on who created the namespaces.
			for _, ns := range []string{"openstack", "ovn"} {
				objs.role(t, ns)
				objs.get(t, "RoleBinding", ns, "target-cluster-access")
			}
		})
	}
}

func TestTargetClusterAccessPrivilegedNamespaces(t *testing.T) {
	const psaLabel = "pod-security.kubernetes.io/enforce"
	tests := []struct {
		name       string
		args       []string
		privileged []string
	}{
		{name: "default none", privileged: nil},
		{name: "one of three", args: []string{"--set", "privilegedNamespaces={ovs}"}, privileged: []string{"ovs"}},
		{name: "two of three", args: []string{"--set", "privilegedNamespaces={openstack,ovs}"}, privileged: []string{"openstack", "ovs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, append([]string{"--set", "namespaces={openstack,ovn,ovs}"}, tt.args...)...)
			for _, name := range []string{"openstack", "ovn", "ovs"} {
				want := slices.Contains(tt.privileged, name)

				labels := objs.get(t, "Namespace", "", name).GetLabels()
				label := labels[psaLabel]
				switch {
				case want && label != "privileged":
					t.Errorf("Namespace %s: %s = %q, want privileged", name, psaLabel, label)
				case !want && label != "baseline":
					t.Errorf("Namespace %s: %s = %q, want baseline, since it is not privileged", name, psaLabel, label)
				case !want && (labels["pod-security.kubernetes.io/warn"] != "restricted" || labels["pod-security.kubernetes.io/audit"] != "restricted"):
					t.Errorf("Namespace %s does not warn and audit at restricted: %v", name, labels)
				}

				verbs := verbsFor(objs.role(t, name).Rules, "apps", "daemonsets")
				switch {
				case want && !slices.Equal(verbs, sorted(fullVerbs)):
					t.Errorf("Role in %s: daemonsets verbs %v, want %v", name, verbs, sorted(fullVerbs))
				case !want && len(verbs) > 0:
					t.Errorf("Role in %s grants %v on daemonsets but the namespace is not privileged", name, verbs)
				}
			}
		})
	}
}

// The hypervisor operator's credentials are asked for on the privileged
// namespaces by default, never on the others, and on none when turned off.
func TestTargetClusterAccessHypervisorOperatorCredentials(t *testing.T) {
	const label = "openstack.c5c3.io/hypervisor-operator-credentials"
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "default: the privileged namespace", want: []string{"openstack"}},
		{name: "turned off", args: []string{"--set", "hypervisorOperatorCredentials=false"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, append([]string{"--set", "namespaces={openstack,ovn}", "--set", "privilegedNamespaces={openstack}"}, tt.args...)...)
			for _, name := range []string{"openstack", "ovn"} {
				got, set := objs.get(t, "Namespace", "", name).GetLabels()[label]
				if want := slices.Contains(tt.want, name); want != set || (set && got != "true") {
					t.Errorf("Namespace %s: %s = %q (set %v), want set %v", name, label, got, set, want)
				}
			}
		})
	}
}

func TestTargetClusterAccessHypervisorTraits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{name: "default off", want: false},
		{name: "off", args: []string{"--set", "hypervisorTraits=false"}, want: false},
		{name: "on", args: []string{"--set", "hypervisorTraits=true"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, append([]string{"--set", "namespaces={openstack}"}, tt.args...)...)
			rules := objs.clusterRole(t).Rules
			hv := verbsFor(rules, "kvm.cloud.sap", "hypervisors")
			status := verbsFor(rules, "kvm.cloud.sap", "hypervisors/status")
			if !tt.want {
				if len(hv) > 0 || len(status) > 0 {
					t.Errorf("hypervisor rules present without opting in: %v, status %v", hv, status)
				}
				for _, rule := range rules {
					if slices.Contains(rule.APIGroups, "kvm.cloud.sap") {
						t.Errorf("rule on kvm.cloud.sap without opting in: %+v", rule)
					}
				}
				return
			}
			if want := sorted([]string{"get", "list", "watch", "patch"}); !slices.Equal(hv, want) {
				t.Errorf("hypervisors verbs %v, want %v", hv, want)
			}
			if !slices.Equal(status, []string{"get"}) {
				t.Errorf("hypervisors/status verbs %v, want [get]", status)
			}
			// Opting in must not widen anything else.
			if got := verbsFor(rules, "", "nodes"); !slices.Equal(got, sorted([]string{"get", "list", "watch"})) {
				t.Errorf("nodes verbs %v with hypervisorTraits", got)
			}
		})
	}
}

func TestTargetClusterAccessServiceAccount(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		wantSA string
	}{
		{name: "default", wantSA: "target-cluster-access"},
		{name: "custom", args: []string{"--set", "serviceAccount.name=anvil"}, wantSA: "anvil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, append([]string{"--set", "namespaces={openstack,ovn}"}, tt.args...)...)

			if got := len(objs.ofKind("ServiceAccount")); got != 1 {
				t.Errorf("%d ServiceAccounts, want 1", got)
			}
			objs.get(t, "ServiceAccount", releaseNamespace, tt.wantSA)

			// The registration carries a bound token that expires; a
			// token Secret would be a credential that outlives it.
			if got := objs.ofKind("Secret"); len(got) != 0 {
				t.Errorf("the chart renders %d Secrets, want none: no long-lived token", len(got))
			}

			wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: tt.wantSA, Namespace: releaseNamespace}
			var subjects [][]rbacv1.Subject
			for _, ns := range []string{"openstack", "ovn"} {
				subjects = append(subjects, convert[rbacv1.RoleBinding](t, objs.get(t, "RoleBinding", ns, "target-cluster-access")).Subjects)
			}
			crb := convert[rbacv1.ClusterRoleBinding](t, objs.get(t, "ClusterRoleBinding", "", "target-cluster-access"))
			subjects = append(subjects, crb.Subjects)
			for i, got := range subjects {
				if !slices.Equal(got, []rbacv1.Subject{wantSubject}) {
					t.Errorf("binding %d: subjects %+v, want %+v", i, got, wantSubject)
				}
			}
		})
	}
}

func TestTargetClusterAccessRoleRules(t *testing.T) {
	objs := render(t, "--set", "namespaces={openstack,ovn}", "--set", "privilegedNamespaces={openstack}", "--set", "hypervisorTraits=true")

	// The exact grant of an ordinary namespace.
	rules := objs.role(t, "ovn").Rules
	want := map[[2]string][]string{
		{"", "configmaps"}:                          fullVerbs,
		{"", "secrets"}:                             fullVerbs,
		{"", "services"}:                            fullVerbs,
		{"", "serviceaccounts"}:                     nil,
		{"", "serviceaccounts/token"}:               nil,
		{"", "persistentvolumeclaims"}:              {"get", "list", "watch", "delete"},
		{"", "pods"}:                                {"get", "list", "watch"},
		{"", "events"}:                              {"create", "patch"},
		{"apps", "deployments"}:                     fullVerbs,
		{"apps", "statefulsets"}:                    fullVerbs,
		{"batch", "jobs"}:                           fullVerbs,
		{"batch", "cronjobs"}:                       fullVerbs,
		{"cert-manager.io", "certificates"}:         fullVerbs,
		{"policy", "poddisruptionbudgets"}:          fullVerbs,
		{"gateway.networking.k8s.io", "httproutes"}: fullVerbs,
		{rbacv1.GroupName, "roles"}:                 nil,
		{rbacv1.GroupName, "rolebindings"}:          nil,
		{"apps", "daemonsets"}:                      nil,
		{"", "nodes"}:                               nil,
		{rbacv1.GroupName, "clusterroles"}:          nil,
		{rbacv1.GroupName, "clusterrolebindings"}:   nil,
		{"apps", "replicasets"}:                     nil,
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations"}: nil,
	}
	for key, verbs := range want {
		if got := verbsFor(rules, key[0], key[1]); !slices.Equal(got, sorted(verbs)) {
			t.Errorf("Role in ovn: %q/%s verbs %v, want %v", key[0], key[1], got, sorted(verbs))
		}
	}

	// No Role, privileged or not, may let Anvil grant more than it holds, and
	// none may use wildcards.
	for _, o := range objs.ofKind("Role") {
		role := convert[rbacv1.Role](t, o)
		for _, rule := range role.Rules {
			// RBAC objects are off limits altogether: with them a stolen
			// credential could grant itself to anyone.
			if slices.Contains(rule.APIGroups, rbacv1.GroupName) {
				t.Errorf("Role in %s grants on RBAC objects: %+v", role.Namespace, rule)
			}
			for _, forbidden := range []string{"escalate", "bind", "impersonate", "update", "*"} {
				if slices.Contains(rule.Verbs, forbidden) {
					t.Errorf("Role in %s grants %q: %+v", role.Namespace, forbidden, rule)
				}
			}
			if slices.Contains(rule.Resources, "*") || slices.Contains(rule.APIGroups, "*") {
				t.Errorf("Role in %s uses a wildcard: %+v", role.Namespace, rule)
			}
		}
	}
}

func TestTargetClusterAccessClusterRole(t *testing.T) {
	for _, traits := range []string{"false", "true"} {
		t.Run("hypervisorTraits="+traits, func(t *testing.T) {
			objs := render(t, "--set", "namespaces={openstack}", "--set", "privilegedNamespaces={openstack}", "--set", "hypervisorTraits="+traits)
			if got := len(objs.ofKind("ClusterRole")); got != 1 {
				t.Errorf("%d ClusterRoles, want 1", got)
			}
			if got := len(objs.ofKind("ClusterRoleBinding")); got != 1 {
				t.Errorf("%d ClusterRoleBindings, want 1", got)
			}
			crb := convert[rbacv1.ClusterRoleBinding](t, objs.get(t, "ClusterRoleBinding", "", "target-cluster-access"))
			if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != "target-cluster-access" {
				t.Errorf("ClusterRoleBinding refers to %+v", crb.RoleRef)
			}

			rules := objs.clusterRole(t).Rules
			readOnly := sorted([]string{"get", "list", "watch"})
			for _, res := range []string{"nodes", "namespaces"} {
				if got := verbsFor(rules, "", res); !slices.Equal(got, readOnly) {
					t.Errorf("%s verbs %v, want %v", res, got, readOnly)
				}
			}
			for _, rule := range rules {
				touchesNodes := slices.Contains(rule.Resources, "nodes") || slices.Contains(rule.Resources, "*")
				if touchesNodes && (slices.Contains(rule.Verbs, "patch") || slices.Contains(rule.Verbs, "*")) {
					t.Errorf("ClusterRole may patch nodes: %+v", rule)
				}
				for _, v := range rule.Verbs {
					if v == "escalate" || v == "bind" || v == "impersonate" || v == "*" {
						t.Errorf("ClusterRole grants %q: %+v", v, rule)
					}
				}
				if slices.Contains(rule.Resources, "secrets") {
					t.Errorf("ClusterRole reaches Secrets cluster-wide: %+v", rule)
				}
			}
		})
	}
}

func TestTargetClusterAccessFullname(t *testing.T) {
	long := strings.Repeat("r", 53)
	tests := []struct {
		release string
		want    string
	}{
		{release: "target-cluster-access", want: "target-cluster-access"},
		{release: "compute-a-target-cluster-access", want: "compute-a-target-cluster-access"},
		{release: "anvil", want: "anvil-target-cluster-access"},
		// 53 characters of release plus the suffix would pass 63.
		{release: long, want: strings.TrimSuffix((long + "-target-cluster-access")[:63], "-")},
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			objs := renderRelease(t, tt.release, "--set", "namespaces={openstack}")
			for _, kind := range []string{"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
				for _, o := range objs.ofKind(kind) {
					if o.GetName() != tt.want {
						t.Errorf("%s named %q, want %q", kind, o.GetName(), tt.want)
					}
					if len(o.GetName()) > 63 {
						t.Errorf("%s name %q is longer than 63 characters", kind, o.GetName())
					}
				}
			}
		})
	}
}

func TestTargetClusterAccessCommonLabels(t *testing.T) {
	objs := renderRelease(t, "access", "--set", "namespaces={openstack}", "--set", "privilegedNamespaces={openstack}", "--set", "hypervisorTraits=true")
	want := map[string]string{
		"app.kubernetes.io/name":       "target-cluster-access",
		"app.kubernetes.io/instance":   "access",
		"app.kubernetes.io/managed-by": "Helm",
		"helm.sh/chart":                "target-cluster-access-0.1.0",
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		for k, v := range want {
			if got := o.GetLabels()[k]; got != v {
				t.Errorf("%s %s: label %s = %q, want %q", o.GetKind(), o.GetName(), k, got, v)
			}
		}
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
		if !kinds[kind] {
			t.Errorf("no %s rendered", kind)
		}
	}
}

func TestTargetClusterAccessLint(t *testing.T) {
	stdout, stderr, err := helm(t, "lint", "--strict", accessChart, "--namespace", releaseNamespace,
		"--set", "namespaces={openstack,ovn}", "--set", "privilegedNamespaces={openstack}", "--set", "hypervisorTraits=true")
	if err != nil {
		t.Fatalf("helm lint: %v\n%s%s", err, stdout, stderr)
	}
}
