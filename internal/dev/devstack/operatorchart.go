package devstack

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/testenv"
)

const (
	// OperatorModeChart installs the operator from charts/anvil-operator and
	// lets the management cluster's pod runner run its pod as the local
	// binary, under the chart's ServiceAccount: what `up` does by default.
	OperatorModeChart = "chart"
	// OperatorModeProcess runs the operator as a plain background process
	// with the devstack's admin kubeconfig, for debugging it.
	OperatorModeProcess = "process"

	// OperatorRelease is the Helm release name of the devstack's operator,
	// and so the name of its Deployment, ServiceAccount and roles.
	OperatorRelease = "anvil-operator"
	// OperatorImageRepository is the image repository the devstack renders
	// the chart with. Nothing pulls it: the management cluster's pod runner
	// runs containers of this repository as the locally built binary. The
	// .invalid domain cannot resolve, so nothing could dial it either.
	OperatorImageRepository = "anvil.devstack.invalid/anvil-operator"
	// operatorBinaryAnnotation carries the binary's digest on the pod
	// template, so a rebuilt operator rolls the Deployment.
	operatorBinaryAnnotation = "devstack.anvil.c5c3.io/operator-binary-sha256"
)

// poolResync is the devstack operator's --pool-resync-interval.
const poolResync = 15 * time.Second

// operatorBinary is where `up` builds the operator.
func (s *Stack) operatorBinary() string { return filepath.Join(s.dir, "bin", "anvil-operator") }

// operatorLog is the operator's log in both modes; in chart mode the pod
// runner appends every operator pod's output to it.
func (s *Stack) operatorLog() string { return filepath.Join(s.dir, "operator.log") }

// operatorManifestPath keeps the rendered chart, which installWebhooks reads
// the webhook configuration from.
func (s *Stack) operatorManifestPath() string { return filepath.Join(s.dir, "operator-chart.yaml") }

// chartValues are the values the devstack sets; everything else keeps the
// chart's defaults, so the devstack runs what a user installs. The ports
// differ because every pod here shares the host's network, where the
// defaults may be taken.
func chartValues(op *operatorState, binarySHA256 string, keystoneHosts []string) map[string]any {
	values := map[string]any{
		"image":             map[string]any{"repository": OperatorImageRepository},
		"watchNamespaces":   []string{testenv.WorkloadNamespace},
		"clustersNamespace": clustersNamespace,
		"healthPort":        op.healthPort(),
		"metrics":           map[string]any{"port": op.metricsPort()},
		"webhook": map[string]any{
			"port": op.WebhookPort,
			// cert-manager mode mounts the Secret the Certificate names;
			// adaptChartObjects writes that Secret with the devstack's own
			// certificate, issued for the loopback address the apiserver
			// dials, in place of the Certificate.
			"certificates": map[string]any{"mode": "certManager"},
		},
		"nodeSelector":   map[string]string{corev1.LabelHostname: NodeName(ManagementCluster, 1)},
		"podAnnotations": map[string]string{operatorBinaryAnnotation: binarySHA256},
		// A settled pool polls Nova for what no watch reports (a failed
		// build's count, a service's state); the devstack's nova-compute
		// audits every 10 s, so the pools look every 15 s rather than
		// every minute, and a newcomer sees a count move within seconds.
		"extraArgs": []string{"--pool-resync-interval=" + poolResync.String()},
	}
	// A standalone Nova, which no ControlPlane owns, may name the local
	// Keystone only when the operator lists it.
	if len(keystoneHosts) > 0 {
		values["allowedKeystoneHosts"] = keystoneHosts
	}
	return values
}

// renderOperatorChart runs `helm template` on the repository's chart.
func (s *Stack) renderOperatorChart(ctx context.Context, values map[string]any) ([]byte, error) {
	raw, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	valuesPath := filepath.Join(s.dir, "operator-values.yaml")
	if err := os.WriteFile(valuesPath, raw, 0o600); err != nil {
		return nil, err
	}
	return s.helm(ctx, "template", OperatorRelease,
		filepath.Join(s.root, "charts", "anvil-operator"), "--namespace", OperatorNamespace, "--values", valuesPath)
}

// helm runs the pinned helm with args and returns its standard output; an
// error carries the last lines of its standard error, which names what
// failed and holds no value helm was given in a file.
func (s *Stack) helm(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "helm"), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// helm's caches stay in the state directory, out of the user's home.
	home := filepath.Join(s.dir, "helm")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", args[0], err, lastLines(stderr.String(), 5))
	}
	return stdout.Bytes(), nil
}

// decodeManifests splits a multi-document YAML stream into objects.
func decodeManifests(raw []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// adaptChartObjects returns what the devstack applies of the rendered
// chart: everything but the webhook configuration, which installWebhooks
// registers once the operator answers, pointed at its loopback port (the
// kwok apiserver has no route to a Service). Each of the chart's
// Certificates (the webhook's and the metrics server's), whose names are
// the Services', becomes the Secret it names, carrying the devstack's
// serving certificate for the loopback address every client dials here; the
// self-signed Issuer is not needed.
func adaptChartObjects(objs []*unstructured.Unstructured, crt, key, ca []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	certificates := 0
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ValidatingWebhookConfiguration", "Issuer":
			continue
		case "Certificate":
			certificates++
			secretName, _, err := unstructured.NestedString(obj.Object, "spec", "secretName")
			if err != nil || secretName == "" {
				return nil, fmt.Errorf("the chart's Certificate %s names no Secret", obj.GetName())
			}
			data := map[string]any{}
			for k, v := range map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key, "ca.crt": ca} {
				data[k] = encodeBase64(v)
			}
			secret := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "type": string(corev1.SecretTypeTLS), "data": data,
			}}
			secret.SetName(secretName)
			secret.SetNamespace(obj.GetNamespace())
			secret.SetLabels(obj.GetLabels())
			obj = secret
		}
		out = append(out, obj)
	}
	if certificates != 2 {
		return nil, fmt.Errorf("the chart rendered %d Certificates, want the webhook's and the metrics server's", certificates)
	}
	return out, nil
}

// chartWebhookConfigs reads the rendered chart's webhook configuration.
func chartWebhookConfigs(raw []byte) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	objs, err := decodeManifests(raw)
	if err != nil {
		return nil, err
	}
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, obj := range objs {
		if obj.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cfg); err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	if len(out) == 0 {
		return nil, errors.New("the chart rendered no ValidatingWebhookConfiguration")
	}
	return out, nil
}

// installOperatorChart renders the chart, applies it to the management
// cluster with server-side apply and waits until the pod runner runs the
// operator and its probes and webhook server answer. Ports are kept from
// the previous up, so the same binary renders the same objects and a
// repeated up changes nothing.
func (s *Stack) installOperatorChart(ctx context.Context, st *state, sum string) (string, error) {
	if op := st.Operator; op != nil && op.Mode != OperatorModeChart && processAlive(op.PID) {
		// Switching from a process operator: only one may run.
		if err := stopProcess(op.PID, 15*time.Second); err != nil {
			return "", err
		}
		st.Operator = nil
	}
	op, err := chartOperatorState(st.Operator)
	if err != nil {
		return "", err
	}
	op.BinarySHA256 = sum
	st.Operator = op
	hosts, err := s.allowedKeystoneHosts()
	if err != nil {
		return "", err
	}
	raw, err := s.renderOperatorChart(ctx, chartValues(op, sum, hosts))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(s.operatorManifestPath(), raw, 0o600); err != nil {
		return "", err
	}
	objs, err := decodeManifests(raw)
	if err != nil {
		return "", err
	}
	crt, key, ca, err := s.webhookPEMs()
	if err != nil {
		return "", err
	}
	if objs, err = adaptChartObjects(objs, crt, key, ca); err != nil {
		return "", err
	}
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	for _, obj := range objs {
		obj.SetManagedFields(nil)
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("anvil-devstack"), client.ForceOwnership); err != nil {
			return "", fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if err := s.waitForChartOperator(ctx, c, op); err != nil {
		return "", err
	}
	return fmt.Sprintf("chart charts/anvil-operator as ServiceAccount %s/%s, webhooks on %s, log %s",
		OperatorNamespace, OperatorRelease, webhookURL(op.WebhookPort, ""), s.operatorLog()), nil
}

// chartOperatorState keeps the ports of a previous chart install, or picks
// free ones.
func chartOperatorState(prev *operatorState) (*operatorState, error) {
	if prev != nil && prev.Mode == OperatorModeChart && prev.healthPort() > 0 && prev.metricsPort() > 0 && prev.WebhookPort > 0 {
		next := *prev
		return &next, nil
	}
	ports, err := netutil.FreeLoopbackPorts(3)
	if err != nil {
		return nil, err
	}
	return &operatorState{
		Mode:        OperatorModeChart,
		HealthAddr:  WebhookHost + ":" + strconv.Itoa(ports[0]),
		MetricsAddr: WebhookHost + ":" + strconv.Itoa(ports[1]),
		WebhookPort: ports[2],
	}, nil
}

// waitForChartOperator waits until the Deployment rolled out to one pod of
// the current binary and the operator answers.
func (s *Stack) waitForChartOperator(ctx context.Context, c client.Client, op *operatorState) error {
	pool, _, err := s.caPool()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorRelease}, d); err != nil {
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want {
			last = fmt.Sprintf("deployment: %d of %d updated, %d available, %d in all", st.UpdatedReplicas, want, st.AvailableReplicas, st.Replicas)
			return false, nil
		}
		if !healthy(ctx, op.HealthAddr) || !webhookServing(ctx, pool, op.WebhookPort) {
			last = "the operator's probes or webhook server do not answer yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the operator's Deployment did not become ready (%s); see %s: %w", last, s.operatorLog(), err)
	}
	return nil
}

// webhookPEMs reads the serving certificate and key ensurePKI issued, and
// the devstack CA.
func (s *Stack) webhookPEMs() (crt, key, ca []byte, err error) {
	if crt, err = os.ReadFile(filepath.Join(s.webhookCertDir(), corev1.TLSCertKey)); err != nil {
		return nil, nil, nil, err
	}
	if key, err = os.ReadFile(filepath.Join(s.webhookCertDir(), corev1.TLSPrivateKeyKey)); err != nil {
		return nil, nil, nil, err
	}
	if ca, err = os.ReadFile(s.caCertPath()); err != nil {
		return nil, nil, nil, err
	}
	return crt, key, ca, nil
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// uninstallOperatorChart deletes the chart's Deployment and waits until its
// pods are gone, so a process operator does not run beside it. The rest of
// the release stays: it grants nothing to a process with its own
// kubeconfig, and the next chart install applies it again.
func (s *Stack) uninstallOperatorChart(ctx context.Context) error {
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return err
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: OperatorRelease}}
	if err := c.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/instance": OperatorRelease}); err != nil {
			return false, err
		}
		// Without grace: with --openstack=false no pod runner is left to
		// confirm a graceful deletion, and the pod must be gone before a
		// process operator starts.
		for i := range pods.Items {
			if err := c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return false, err
			}
		}
		return len(pods.Items) == 0, nil
	})
}
