package devstack

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/config/crd"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// reachable tells whether an apiserver answers its readiness endpoint.
func reachable(ctx context.Context, cfg *rest.Config) bool {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 3 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false
	}
	body, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil && strings.TrimSpace(string(body)) == "ok"
}

// createNodes gives each compute cluster its fake hypervisor nodes, labelled
// with a zone each, and the management cluster one node, and waits until
// kwok reports them Ready.
func (s *Stack) createNodes(ctx context.Context, st *state) (string, error) {
	// Pod runners of an earlier `up` with OpenStack registered nodes of
	// the same names; they stop, and their nodes make way for kwok's.
	hadRunners := len(st.PodRunners) > 0
	if err := s.stopPodRunners(st); err != nil {
		return "", err
	}
	if hadRunners {
		c, err := s.clusterClient(ctx, ManagementCluster)
		if err != nil {
			return "", err
		}
		if err := deleteRunnerNodes(ctx, c, ManagementCluster); err != nil {
			return "", err
		}
	}
	total := 0
	for i := range s.n {
		cluster := testenv.ComputeClusterName(i)
		c, err := s.clusterClient(ctx, cluster)
		if err != nil {
			return "", err
		}
		if hadRunners {
			if err := deleteRunnerNodes(ctx, c, cluster); err != nil {
				return "", err
			}
		}
		var names []string
		for j := 1; j <= NodesPerComputeCluster; j++ {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName(cluster, j)}}
			zone := ZoneName(cluster, j)
			if _, err := controllerutil.CreateOrUpdate(ctx, c, node, func() error {
				if node.Labels == nil {
					node.Labels = map[string]string{}
				}
				node.Labels[corev1.LabelTopologyZone] = zone
				node.Labels["kubernetes.io/hostname"] = node.Name
				node.Labels["kubernetes.io/os"] = "linux"
				if node.Annotations == nil {
					node.Annotations = map[string]string{}
				}
				node.Annotations[testenv.FakeNodeAnnotation] = kwokNodeValue
				return nil
			}); err != nil {
				return "", fmt.Errorf("node %s on %s: %w", node.Name, cluster, err)
			}
			names = append(names, node.Name)
		}
		if err := waitNodesReady(ctx, c, names); err != nil {
			return "", fmt.Errorf("%s: %w", cluster, err)
		}
		total += len(names)
	}
	// The management cluster gets one node, where kwok simulates the Nova's
	// Deployments and database Jobs.
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	mgmtNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName(ManagementCluster, 1)}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, mgmtNode, func() error {
		mgmtNode.Labels = map[string]string{"kubernetes.io/hostname": mgmtNode.Name, "kubernetes.io/os": "linux"}
		mgmtNode.Annotations = map[string]string{testenv.FakeNodeAnnotation: kwokNodeValue}
		return nil
	}); err != nil {
		return "", fmt.Errorf("node %s on %s: %w", mgmtNode.Name, ManagementCluster, err)
	}
	if err := waitNodesReady(ctx, c, []string{mgmtNode.Name}); err != nil {
		return "", fmt.Errorf("%s: %w", ManagementCluster, err)
	}
	return fmt.Sprintf("%d Ready nodes on %d compute cluster(s), 1 on %s", total, s.n, ManagementCluster), nil
}

func waitNodesReady(ctx context.Context, c client.Client, names []string) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			node := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			ready := false
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready = true
				}
			}
			if !ready {
				return false, nil
			}
		}
		return true, nil
	})
}

// installCRDs applies the embedded CRDs to the management cluster, and the
// stand-in of the hypervisor operator's Hypervisor CRD to every compute
// cluster, where pools write custom traits; it waits until each is
// established.
func (s *Stack) installCRDs(ctx context.Context, _ *state) (string, error) {
	defs, err := crd.Definitions()
	if err != nil {
		return "", err
	}
	standIns, err := crd.StandIns()
	if err != nil {
		return "", err
	}
	if err := s.applyCRDs(ctx, ManagementCluster, defs); err != nil {
		return "", err
	}
	for i := range s.n {
		if err := s.applyCRDs(ctx, testenv.ComputeClusterName(i), standIns); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d CRDs established, and the Hypervisor stand-in on %d compute cluster(s)", len(defs), s.n), nil
}

// applyCRDs creates or updates CRDs on a cluster and waits until each is
// established.
func (s *Stack) applyCRDs(ctx context.Context, cluster string, defs []*apiextensionsv1.CustomResourceDefinition) error {
	c, err := s.clusterClient(ctx, cluster)
	if err != nil {
		return err
	}
	for _, want := range defs {
		got := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
			got.Labels, got.Annotations = want.Labels, want.Annotations
			got.Spec = want.Spec
			return nil
		}); err != nil {
			return fmt.Errorf("CRD %s on %s: %w", want.Name, cluster, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, want := range defs {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			established := false
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CRDs on %s to be established: %w", cluster, err)
	}
	return nil
}

// createNamespaces creates openstack, the registration and the operator
// namespaces on the management cluster. The management cluster's openstack
// carries the opt-in to NovaCompute pools, so the guide's pool is admitted
// there as written. On the compute clusters, the access chart creates
// openstack (see installAccessChart).
func (s *Stack) createNamespaces(ctx context.Context, _ *state) (string, error) {
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	for _, ns := range []string{testenv.WorkloadNamespace, clustersNamespace, OperatorNamespace} {
		var labels map[string]string
		if ns == testenv.WorkloadNamespace {
			labels = map[string]string{novav1alpha1.PrivilegedPoolsLabel: "true"}
		}
		if err := ensureLabelledNamespace(ctx, c, ns, labels); err != nil {
			return "", fmt.Errorf("namespace %s on %s: %w", ns, ManagementCluster, err)
		}
	}
	return "", nil
}

// ensureLabelledNamespace creates a namespace with labels, or adds the
// labels to one that exists: a devstack set up before the opt-in existed
// keeps its namespace, and gets the label on its next up.
func ensureLabelledNamespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	switch err := c.Create(ctx, obj); {
	case err == nil || (apierrors.IsAlreadyExists(err) && len(labels) == 0):
		return nil
	case !apierrors.IsAlreadyExists(err):
		return err
	}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	maps.Copy(obj.Labels, labels)
	return c.Patch(ctx, obj, patch)
}
