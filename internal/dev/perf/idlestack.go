package perf

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/config/crd"
	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/operator"
	"github.com/anvil/anvil/internal/targetcluster"
)

// idleStack is P3's system: the real OpenStack services, a management
// cluster whose pod runner runs the Nova's Jobs, one compute cluster whose
// pod runner registers one node per pool and runs a real nova-compute on
// each, and the operator with its production intervals.
type idleStack struct {
	env     *testenv.Environment
	compute *testenv.Cluster
	cloud   *openstacktest.Cloud
	// run makes host, zone and trait names unique per run, since the
	// OpenStack services outlive the clusters.
	run   string
	nodes []string
	// stopRunners ends both pod runners, whose processes stop with them.
	stopRunners context.CancelFunc
	runners     []*podrunner.Runner
	stateDir    string
}

// startIdleStack starts everything but the ControlPlane and the pools.
// The caller stops it with stop, which leaves the OpenStack services to
// their release function.
func startIdleStack(ctx context.Context, cloud *openstacktest.Cloud, pools int, logs io.Writer) (_ *idleStack, err error) {
	env, err := testenv.Start(ctx, testenv.Options{ComputeClusters: 1, AuditReads: true})
	if err != nil {
		return nil, err
	}
	s := &idleStack{env: env, compute: env.Compute[0], cloud: cloud, run: fmt.Sprintf("%05d", time.Now().Unix()%100000)}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	for _, c := range []*testenv.Cluster{env.Management, s.compute} {
		if err := c.StartWorkloads(ctx); err != nil {
			return nil, err
		}
	}
	if err := installStandIns(ctx, s.compute); err != nil {
		return nil, err
	}
	if s.stateDir, err = os.MkdirTemp("", "anvil-p3-runner-"); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.stopRunners = cancel
	if err := s.startRunner(runCtx, env.Management, []podrunner.Node{{Name: "p3-mgmt-" + s.run}}); err != nil {
		return nil, err
	}
	nodes := make([]podrunner.Node, pools)
	for i := range nodes {
		name := s.poolName(i)
		s.nodes = append(s.nodes, s.nodeName(i))
		nodes[i] = podrunner.Node{Name: s.nodeName(i), Labels: map[string]string{
			corev1.LabelTopologyZone: s.zoneName(i), poolLabel: name,
		}}
	}
	if err := s.startRunner(runCtx, s.compute, nodes); err != nil {
		return nil, err
	}
	return s, s.startOperator(ctx, logs)
}

// poolName, nodeName and zoneName name the i-th pool, its node and the
// node's zone; three zones keep the aggregates few, as in a real region.
func (s *idleStack) poolName(i int) string { return fmt.Sprintf("p3-%02d", i) }
func (s *idleStack) nodeName(i int) string { return fmt.Sprintf("hv%s-p3-%02d", s.run, i) }
func (s *idleStack) zoneName(i int) string { return fmt.Sprintf("az%s-p3-%d", s.run, i%3) }

// trait is the custom trait every pool declares, so that each settled
// pass also checks Placement and reads the node's Hypervisor.
func (s *idleStack) trait() string { return "CUSTOM_P3_" + s.run }

// installStandIns installs the Hypervisor CRD the hypervisor operator
// would own, and waits until it serves.
func installStandIns(ctx context.Context, c *testenv.Cluster) error {
	standIns, err := crd.StandIns()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	for _, d := range standIns {
		if err := cl.Create(ctx, d); err != nil {
			return err
		}
	}
	return poll(ctx, time.Minute, "the stand-in CRDs established", func(ctx context.Context) (bool, error) {
		for _, d := range standIns {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
				return false, nil //nolint:nilerr // not there yet
			}
			if !slices.ContainsFunc(got.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				return false, nil
			}
		}
		return true, nil
	})
}

// startRunner registers nodes on c through a pod runner whose processes
// trust the local Keystone's CA, as a node trusts its cloud's.
func (s *idleStack) startRunner(ctx context.Context, c *testenv.Cluster, nodes []podrunner.Node) error {
	r, err := podrunner.New(podrunner.Options{
		Config: c.Config, Nodes: nodes, StateDir: filepath.Join(s.stateDir, c.Name),
		Env:    map[string]string{"REQUESTS_CA_BUNDLE": s.cloud.Endpoints[localcloud.KeystoneCA]},
		Logger: logr.Discard(),
	})
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return fmt.Errorf("the pod runner of %s: %w", c.Name, err)
	}
	s.runners = append(s.runners, r)
	return nil
}

// startOperator runs every controller and webhook with the production
// intervals: the pool resync and the cluster probe of the flags' defaults.
// Unlike a deployed replica it does not elect a leader.
func (s *idleStack) startOperator(ctx context.Context, logs io.Writer) error {
	mgr, err := s.env.NewManager(logs)
	if err != nil {
		return err
	}
	keystoneHosts, err := keystonepolicy.EntriesFor(s.cloud.Endpoints[localcloud.KeystoneURL], s.cloud.Endpoints[localcloud.KeystonePublicURL])
	if err != nil {
		return err
	}
	reg, err := operator.Setup(ctx, mgr, &operator.Options{
		ClustersNamespace: s.env.ClustersNamespace, EnableWebhooks: true,
		ClusterProbeInterval: targetcluster.DefaultProbeInterval, PoolResync: novacompute.DefaultResync,
		AllowedKeystoneHosts: keystoneHosts,
		// testenv registers its compute clusters without a namespaces key.
		AllowClusterWideRegistrations: true,
	})
	if err != nil {
		return err
	}
	return testenv.StartManager(mgr, func() bool {
		_, err := reg.Resolve(s.compute.Name)
		return err == nil
	})
}

// stop ends the pod runners, then the clusters, and removes the runners'
// state.
func (s *idleStack) stop() {
	if s.stopRunners != nil {
		s.stopRunners()
		for _, r := range s.runners {
			_ = r.Wait()
		}
	}
	_ = s.env.Stop()
	if s.stateDir != "" {
		_ = os.RemoveAll(s.stateDir)
	}
}

// poll calls cond every 500 ms until it holds, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
