package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// Status prints one line per component: each cluster with what it holds, and
// the operator. It reports a missing stack instead of failing.
func (s *Stack) Status(ctx context.Context) error {
	if _, err := os.Stat(s.statePath()); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(s.out, "No devstack in %s. Start one with: make devstack\n", s.dir)
		return nil
	}
	st, err := s.loadState()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSTATE\tDETAIL")
	for _, name := range st.Clusters {
		fmt.Fprintf(tw, "cluster %s\t%s\n", name, s.clusterStatus(ctx, name))
	}
	switch op := st.Operator; {
	case op == nil:
		fmt.Fprintln(tw, "operator\tnot started\t")
	case op.Mode == OperatorModeChart && !healthy(ctx, op.HealthAddr):
		fmt.Fprintf(tw, "operator\tnot ready\tDeployment %s/%s, probes on %s; see %s\n", OperatorNamespace, OperatorRelease, op.HealthAddr, s.operatorLog())
	case op.Mode == OperatorModeChart:
		fmt.Fprintf(tw, "operator\tready\tDeployment %s/%s from the chart, metrics on https://%s\n", OperatorNamespace, OperatorRelease, op.MetricsAddr)
	case !processAlive(op.PID):
		fmt.Fprintf(tw, "operator\tstopped\tpid %d is gone; see %s/operator.log\n", op.PID, s.dir)
	case !healthy(ctx, op.HealthAddr):
		fmt.Fprintf(tw, "operator\tnot ready\tpid %d, probes on %s\n", op.PID, op.HealthAddr)
	default:
		fmt.Fprintf(tw, "operator\tready\tpid %d, metrics on %s\n", op.PID, op.MetricsAddr)
	}
	for _, name := range st.Clusters {
		if pr := st.PodRunners[name]; pr != nil {
			fmt.Fprintf(tw, "podrunner %s\t%s\n", name, s.podRunnerStatus(name, pr))
		}
	}
	if st.OpenStack != nil {
		fmt.Fprintf(tw, "openstack\t%s\n", s.openStackStatus(ctx))
	}
	fmt.Fprintf(tw, "gateway\t%s\n", s.gatewayStatus(ctx, st))
	fmt.Fprintf(tw, "cert-manager\t%s\n", s.certManagerStatus(ctx))
	fmt.Fprintf(tw, "webhooks\t%s\n", s.webhookStatus(ctx, st))
	fmt.Fprintf(tw, "controlplane %s/%s\t%s\n", testenv.WorkloadNamespace, SampleControlPlane, s.sampleStatus(ctx))
	fmt.Fprintf(tw, "kubeconfig\t\t%s\n", s.KubeconfigPath())
	return tw.Flush()
}

// clusterStatus renders "<state>\t<detail>" for one cluster.
func (s *Stack) clusterStatus(ctx context.Context, name string) string {
	cfg, err := s.clusterConfig(ctx, name)
	if err != nil {
		return "unknown\t" + err.Error()
	}
	if !reachable(ctx, cfg) {
		return "down\tapiserver " + cfg.Host + " does not answer"
	}
	c, err := s.clusterClient(ctx, name)
	if err != nil {
		return "unknown\t" + err.Error()
	}
	if name == ManagementCluster {
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		secrets := &corev1.SecretList{}
		_ = c.List(ctx, crds)
		_ = c.List(ctx, secrets, client.InNamespace(clustersNamespace), client.MatchingLabels{targetcluster.RegistrationLabel: "true"})
		anvil := 0
		for _, d := range crds.Items {
			if isAnvilGroup(d.Spec.Group) {
				anvil++
			}
		}
		return fmt.Sprintf("up\t%s, %d Anvil CRDs, %d registered compute cluster(s)", cfg.Host, anvil, len(secrets.Items))
	}
	nodes := &corev1.NodeList{}
	_ = c.List(ctx, nodes)
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return fmt.Sprintf("up\t%s, %d/%d nodes Ready", cfg.Host, ready, len(nodes.Items))
}

func isAnvilGroup(g string) bool {
	switch g {
	case "c5c3.io", "nova.openstack.c5c3.io", "ovn.openstack.c5c3.io", "neutron.openstack.c5c3.io":
		return true
	}
	return false
}

// webhookStatus renders "<state>\t<detail>" for the operator's webhook
// server and the webhooks registered for it.
func (s *Stack) webhookStatus(ctx context.Context, st *state) string {
	if st.Operator == nil || st.Operator.WebhookPort == 0 {
		return "not served\t"
	}
	pool, _, err := s.caPool()
	if err != nil {
		return "unknown\t" + err.Error()
	}
	url := webhookURL(st.Operator.WebhookPort, "")
	if !webhookServing(ctx, pool, st.Operator.WebhookPort) {
		return "down\t" + url + " does not answer"
	}
	c, err := s.managementClientIfUp(ctx)
	if err != nil {
		return "serving\t" + url
	}
	n, err := webhookConfigCount(ctx, c)
	if err != nil {
		return "serving\t" + url + ", " + err.Error()
	}
	return fmt.Sprintf("serving\t%s, %d webhook(s) registered", url, n)
}

// sampleStatus renders the sample ControlPlane's line.
func (s *Stack) sampleStatus(ctx context.Context) string {
	c, err := s.managementClientIfUp(ctx)
	if err != nil {
		return "unknown\t" + err.Error()
	}
	return controlPlaneStatus(ctx, c)
}

// managementClientIfUp returns a client for the management cluster, or an
// error when its apiserver does not answer, so status does not wait out a
// client timeout per line.
func (s *Stack) managementClientIfUp(ctx context.Context) (client.Client, error) {
	cfg, err := s.clusterConfig(ctx, ManagementCluster)
	if err != nil {
		return nil, err
	}
	if !reachable(ctx, cfg) {
		return nil, errors.New("the management cluster does not answer")
	}
	return client.New(cfg, client.Options{Scheme: devstackScheme()})
}
