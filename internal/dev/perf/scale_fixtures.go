package perf

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// poolLabel is the node label a P3 or P4 pool selects its nodes by; createPool sets the
// same key in the pool's nodeSelector.
const poolLabel = "openstack.c5c3.io/nova-compute-pool"

// zoneLabel puts every node of a cluster in one availability zone, which
// the pools turn into one aggregate per cluster.
const zoneLabel = "topology.kubernetes.io/zone"

// nodeWriters is how many Node creations run at once per cluster.
const nodeWriters = 8

// scaleNodeName names node i of cluster: Nova host names are one
// namespace across the cloud, so every cluster's names differ.
func scaleNodeName(cluster string, i int) string { return fmt.Sprintf("%s-n%04d", cluster, i) }

// scalePoolName names pool i of cluster.
func scalePoolName(cluster string, i int) string { return fmt.Sprintf("p4-%s-%02d", cluster, i) }

// createScaleNodes creates nodes fake nodes on c, the kwok there keeps
// them Ready, spread evenly over pools pools, and waits until all are
// Ready. It lists instead of reading each node, so that the wait costs
// the apiserver one request a second whatever the count.
func createScaleNodes(ctx context.Context, c *testenv.Cluster, nodes, pools int) error {
	work := make(chan int)
	errs := make(chan error, nodeWriters)
	var wg sync.WaitGroup
	for range nodeWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := scaleNodeName(c.Name, i)
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
					Name: name,
					Labels: map[string]string{
						"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
						poolLabel: scalePoolName(c.Name, i%pools), zoneLabel: "az-" + c.Name,
					},
					Annotations: map[string]string{testenv.FakeNodeAnnotation: "fake"},
				}}
				if err := c.Client.Create(ctx, node); client.IgnoreAlreadyExists(err) != nil {
					errs <- fmt.Errorf("creating node %s: %w", name, err)
					return
				}
			}
		}()
	}
	go func() {
		defer close(work)
		for i := range nodes {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &corev1.NodeList{}
		if err := c.Client.List(ctx, list, client.HasLabels{poolLabel}); err != nil {
			return false, nil //nolint:nilerr // a busy apiserver; poll again
		}
		ready := 0
		for i := range list.Items {
			for _, cond := range list.Items[i].Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= nodes, nil
	})
}

// createScaleControlPlane creates P4's ControlPlane: P1's, with its
// Keystone at the simulator and its databases on a loopback port nothing
// listens on, so that no request leaves the machine and the pools' cell
// database read fails at once.
func (s *Stack) createScaleControlPlane(ctx context.Context, name, keystoneURL string, dbPort int32) error {
	mgmt := testenv.ManagementClusterName
	for secret, data := range map[string]map[string]string{
		name + "-bus":              {"transport_url": benchBusURL},
		name + "-bus-ca":           {"ca.crt": benchCA},
		name + "-nova-password":    {"password": "bench-service-secret"},
		name + "-remote-transport": {"transport_url": benchRemoteURL},
		name + "-db":               {"username": "nova", "password": benchDBPass},
	} {
		if err := s.PutSecret(ctx, mgmt, Namespace, secret, data); err != nil {
			return err
		}
	}
	cp := buildControlPlane(name, benchEndpoints(
		&c5c3v1alpha1.KeystoneSpec{InternalEndpoint: keystoneURL, PublicEndpoint: "https://keystone.bench.invalid/v3", Region: "RegionOne"},
		"127.0.0.1", dbPort))
	return s.Env.Management.Client.Create(ctx, cp)
}
