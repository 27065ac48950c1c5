package devstack

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// TestChartForTheDevstack renders the real chart with the devstack's
// values and checks what up applies: the chart's own objects, the
// Deployment on the management runner's node with the devstack's ports,
// the webhook's and the metrics server's Secrets carrying the devstack's
// certificate, both mounted, and no webhook
// configuration, which installWebhooks registers by URL instead.
func TestChartForTheDevstack(t *testing.T) {
	// go test runs in the package's directory; -trimpath leaves no
	// source path in the binary to find the repository from.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..", "..")
	s := &Stack{root: root, dir: t.TempDir(), bin: filepath.Join(root, "bin")}
	op := &operatorState{Mode: OperatorModeChart, HealthAddr: "127.0.0.1:40001", MetricsAddr: "127.0.0.1:40002", WebhookPort: 40003}
	raw, err := s.renderOperatorChart(t.Context(), chartValues(op, "abc", []string{"127.0.0.1:5000"}))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(raw)
	if err != nil {
		t.Fatal(err)
	}
	adapted, err := adaptChartObjects(objs, []byte("CRT"), []byte("KEY"), []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var secrets, mounted []string
	for _, o := range adapted {
		kinds = append(kinds, o.GetKind())
		switch o.GetKind() {
		case "ValidatingWebhookConfiguration":
			t.Error("the chart's webhook configuration is applied; the kwok apiserver cannot reach its Service")
		case "Certificate", "Issuer":
			t.Errorf("the chart's %s is applied; the devstack's certificate names the loopback address", o.GetKind())
		case "Secret":
			secrets = append(secrets, o.GetName())
			data := o.Object["data"].(map[string]any)
			if data["tls.crt"] != base64.StdEncoding.EncodeToString([]byte("CRT")) || data["tls.key"] != base64.StdEncoding.EncodeToString([]byte("KEY")) {
				t.Errorf("Secret %s lacks the devstack's certificate: %v", o.GetName(), data)
			}
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			pod := d.Spec.Template
			for _, v := range pod.Spec.Volumes {
				if v.Secret != nil {
					mounted = append(mounted, v.Secret.SecretName)
				}
			}
			args := strings.Join(pod.Spec.Containers[0].Args, " ")
			for _, want := range []string{"--health-probe-bind-address=:40001", "--metrics-bind-address=$(POD_IP):40002", "--webhook-port=40003",
				"--watch-namespaces=" + testenv.WorkloadNamespace, "--clusters-namespace=" + clustersNamespace, "--allowed-keystone-hosts=127.0.0.1:5000",
				"--metrics-cert-dir=/etc/anvil/metrics-tls", "--pool-resync-interval=15s"} {
				if !strings.Contains(args, want) {
					t.Errorf("args %q lack %q", args, want)
				}
			}
			if !strings.HasPrefix(pod.Spec.Containers[0].Image, OperatorImageRepository+"@") {
				t.Errorf("image = %s", pod.Spec.Containers[0].Image)
			}
			if pod.Spec.NodeSelector["kubernetes.io/hostname"] != NodeName(ManagementCluster, 1) || pod.Annotations[operatorBinaryAnnotation] != "abc" {
				t.Errorf("nodeSelector %v, annotations %v", pod.Spec.NodeSelector, pod.Annotations)
			}
		}
	}
	slices.Sort(secrets)
	slices.Sort(mounted)
	if len(secrets) != 2 || !slices.Equal(secrets, mounted) {
		t.Errorf("the devstack writes Secrets %q, the operator mounts %q; want the webhook's and the metrics server's", secrets, mounted)
	}
	for _, want := range []string{"ServiceAccount", "ClusterRole", "Role", "RoleBinding", "Deployment", "Service", "Secret"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %s among %v", want, kinds)
		}
	}
	cfgs, err := chartWebhookConfigs(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := devstackWebhookConfigs(cfgs, op.WebhookPort, []byte("CA"), nil)
	if err != nil || len(want) != 1 {
		t.Fatalf("devstackWebhookConfigs = %d configurations, %v", len(want), err)
	}
	if _, ok := want[0].Annotations["cert-manager.io/inject-ca-from"]; ok {
		t.Error("the devstack's webhook configuration asks cert-manager to inject the chart's CA")
	}
	for _, w := range want[0].Webhooks {
		if w.ClientConfig.URL == nil || !strings.HasPrefix(*w.ClientConfig.URL, "https://127.0.0.1:40003/") || !bytes.Equal(w.ClientConfig.CABundle, []byte("CA")) {
			t.Errorf("webhook %s calls %v", w.Name, w.ClientConfig)
		}
		if w.NamespaceSelector == nil || len(w.NamespaceSelector.MatchExpressions) != 1 {
			t.Errorf("webhook %s lost the chart's namespace selector", w.Name)
		}
	}
}
