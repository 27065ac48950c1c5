package charts_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// In operator mode the chart renders no certificate: it creates the empty
// Secret the operator fills, passes the flags, gives the operator a
// writable directory, and grants it that one Secret and that one webhook
// configuration by name.
func TestOperatorChartWebhookCertificatesFromTheOperator(t *testing.T) {
	objs := renderOperator(t, "--set", "webhook.certificates.mode=operator", "--set", "webhook.certificates.operator.extraHosts={10.0.0.7}")
	vwc := webhookConfig(t, objs)
	checkWebhooksReachTheService(t, vwc, objs)
	if len(objs.ofKind("Certificate"))+len(objs.ofKind("Issuer")) != 0 {
		t.Error("cert-manager objects rendered in operator mode")
	}
	if _, ok := vwc.Annotations["cert-manager.io/inject-ca-from"]; ok {
		t.Error("inject-ca-from set in operator mode")
	}
	for _, w := range vwc.Webhooks {
		if len(w.ClientConfig.CABundle) > 0 {
			t.Errorf("webhook %s has a caBundle rendered by the chart; the operator writes it", w.Name)
		}
	}
	const secretName = "anvil-operator-webhook-tls"
	secret := convert[corev1.Secret](t, objs.get(t, "Secret", operatorNamespace, secretName))
	if len(secret.Data)+len(secret.StringData) > 0 || secret.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("the Secret has data %v or lacks the keep policy %v", secret.Data, secret.Annotations)
	}

	d := convert[appsv1.Deployment](t, objs.get(t, "Deployment", operatorNamespace, "anvil-operator"))
	c := d.Spec.Template.Spec.Containers[0]
	svc := "anvil-operator-webhook." + operatorNamespace + ".svc"
	for _, want := range []string{"--webhook-cert-dir=/etc/anvil/webhook-tls", "--webhook-cert-secret=" + operatorNamespace + "/" + secretName,
		"--webhook-configuration=anvil-operator", "--webhook-cert-hosts=" + svc + "," + svc + ".cluster.local,10.0.0.7",
		"--webhook-cert-validity=2160h", "--webhook-ca-validity=17520h"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("volume %s mounts Secret %s; in operator mode only the operator reads it", v.Name, v.Secret.SecretName)
		}
		if v.Name == "webhook-tls" && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
			t.Errorf("the certificate directory is not an in-memory emptyDir: %+v", v.VolumeSource)
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "webhook-tls" && (m.ReadOnly || m.MountPath != "/etc/anvil/webhook-tls") {
			t.Errorf("the certificate directory mount %+v is not writable at the cert dir", m)
		}
	}
	checkWebhookCertsRBAC(t, objs, secretName)
}

// checkWebhookCertsRBAC checks that operator mode grants the Secret and
// the webhook configuration by name only, and no create or delete.
func checkWebhookCertsRBAC(t *testing.T, objs rendered, secretName string) {
	t.Helper()
	role := convert[rbacv1.Role](t, objs.get(t, "Role", operatorNamespace, "anvil-operator-webhook-certs"))
	want := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secretName},
		Verbs: []string{"get", "list", "watch", "update"}}
	if len(role.Rules) != 1 || !equalRule(role.Rules[0], want) {
		t.Errorf("webhook-certs Role rules %+v, want %+v", role.Rules, want)
	}
	cr := convert[rbacv1.ClusterRole](t, objs.get(t, "ClusterRole", "", "anvil-operator-webhook-certs"))
	want = rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
		ResourceNames: []string{"anvil-operator"}, Verbs: []string{"get", "list", "watch", "patch"}}
	if len(cr.Rules) != 1 || !equalRule(cr.Rules[0], want) {
		t.Errorf("webhook-certs ClusterRole rules %+v, want %+v", cr.Rules, want)
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		ns := operatorNamespace
		if kind == "ClusterRoleBinding" {
			ns = ""
		}
		b := objs.get(t, kind, ns, "anvil-operator-webhook-certs")
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		if len(subjects) != 1 {
			t.Errorf("%s binds %d subjects, want the operator", kind, len(subjects))
		}
	}
	// Nothing else in the release namespace reaches Secrets.
	for _, o := range objs.ofKind("Role") {
		r := convert[rbacv1.Role](t, o)
		if r.Namespace != operatorNamespace {
			continue
		}
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "secrets") && len(rule.ResourceNames) == 0 {
				t.Errorf("Role %s grants Secrets of the release namespace without a name: %+v", r.Name, rule)
			}
		}
	}
}

// equalRule compares rules field by field, verbs in any order.
func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(sorted(a.Verbs), sorted(b.Verbs)) && len(a.NonResourceURLs) == 0
}
