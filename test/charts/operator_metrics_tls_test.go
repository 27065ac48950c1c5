package charts_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// With cert-manager the metrics server serves a certificate cert-manager
// issued for the metrics Service, and the ServiceMonitor verifies it
// against the CA stored beside it, by the Service's name: no scrape skips
// verification by default.
func TestOperatorChartServiceMonitorVerifiesTLS(t *testing.T) {
	objs := renderOperator(t, "--set", "serviceMonitor.enabled=true")
	const service = "anvil-operator-metrics"
	objs.get(t, "Service", operatorNamespace, service)
	cert := objs.get(t, "Certificate", operatorNamespace, service)
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	serverName := service + "." + operatorNamespace + ".svc"
	if !slices.Contains(dnsNames, serverName) {
		t.Errorf("the metrics Certificate's names %v do not cover the Service", dnsNames)
	}
	webhookIssuer, _, _ := unstructured.NestedStringMap(objs.get(t, "Certificate", operatorNamespace, "anvil-operator-webhook").Object, "spec", "issuerRef")
	if issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef"); !maps.Equal(issuer, webhookIssuer) {
		t.Errorf("the metrics Certificate's issuer %v is not the webhook's %v", issuer, webhookIssuer)
	}
	checkMountsSecret(t, objs, secretName)
	d := convert[appsv1.Deployment](t, objs.get(t, "Deployment", operatorNamespace, "anvil-operator"))
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--metrics-cert-dir=/etc/anvil/metrics-tls") {
		t.Errorf("args %v do not point the metrics server at its certificate", c.Args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/anvil/metrics-tls" && m.ReadOnly }) {
		t.Errorf("mounts %v lack a read-only /etc/anvil/metrics-tls", c.VolumeMounts)
	}

	sm := objs.get(t, "ServiceMonitor", operatorNamespace, "anvil-operator")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(endpoints))
	}
	tlsConfig, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "tlsConfig")
	caName, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "name")
	caKey, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "key")
	if skip, _, _ := unstructured.NestedBool(tlsConfig, "insecureSkipVerify"); skip {
		t.Error("the ServiceMonitor skips verification by default")
	}
	if caName != secretName || caKey != "ca.crt" || tlsConfig["serverName"] != serverName {
		t.Errorf("tlsConfig %v, want the CA of Secret %s and the server name %s", tlsConfig, secretName, serverName)
	}
}

// Without webhooks the metrics certificate still has an issuer; with the
// user's tlsConfig, the chart keeps it as given.
func TestOperatorChartMetricsCertificateVariants(t *testing.T) {
	objs := renderOperator(t, "--set", "webhook.enabled=false")
	cert := objs.get(t, "Certificate", operatorNamespace, "anvil-operator-metrics")
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	objs.get(t, "Issuer", operatorNamespace, issuer)

	objs = renderOperator(t, "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.tlsConfig.serverName=metrics.example")
	sm := objs.get(t, "ServiceMonitor", operatorNamespace, "anvil-operator")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	tlsConfig, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "tlsConfig")
	if len(tlsConfig) != 1 || tlsConfig["serverName"] != "metrics.example" {
		t.Errorf("tlsConfig %v, want the user's alone", tlsConfig)
	}

	objs = renderOperator(t, "--set", "metrics.enabled=false", "--set", "webhook.enabled=false")
	if n := len(objs.ofKind("Certificate")) + len(objs.ofKind("Issuer")); n != 0 {
		t.Errorf("%d cert-manager objects without metrics and webhooks", n)
	}
}

// In operator mode nothing vouches for the metrics certificate, so the
// chart refuses a ServiceMonitor without the user's tlsConfig rather than
// skip verification for them.
func TestOperatorChartServiceMonitorInOperatorMode(t *testing.T) {
	args := []string{"template", operatorRelease, operatorChart, "--namespace", operatorNamespace, "--set", "image.repository=" + testRepository,
		"--set", "webhook.certificates.mode=operator", "--set", "serviceMonitor.enabled=true"}
	_, stderr, err := helm(t, args...)
	if err == nil || !strings.Contains(stderr, "values.serviceMonitor.tlsConfig is required") {
		t.Errorf("rendering a ServiceMonitor in operator mode without tlsConfig: %v\n%s", err, stderr)
	}
	objs := renderOperator(t, "--set", "webhook.certificates.mode=operator", "--set", "serviceMonitor.enabled=true",
		"--set", "serviceMonitor.tlsConfig.insecureSkipVerify=true")
	if len(objs.ofKind("Certificate")) != 0 {
		t.Error("a Certificate rendered in operator mode")
	}
	d := convert[appsv1.Deployment](t, objs.get(t, "Deployment", operatorNamespace, "anvil-operator"))
	if slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-dir") }) {
		t.Error("operator mode points the metrics server at a certificate directory nobody fills")
	}
}
