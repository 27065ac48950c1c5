package perf

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
	"github.com/anvil/anvil/internal/operator"
)

// p2Stack is P2's world: the real Keystone, Placement and Nova of
// hack/openstack/openstack.sh, a management cluster whose pod runner runs
// the Nova's discovery Job as a real nova-manage, one compute cluster whose
// nodes a pod runner each registers and whose nova-compute pods it runs,
// and the operator.
type p2Stack struct {
	*Stack
	cloud   *openstacktest.Cloud
	compute *testenv.Cluster
	// runners stops the pod runners; stateDir holds their nodes.
	runners  context.CancelFunc
	release  func()
	runCtx   context.Context
	stateDir string
	started  []*podrunner.Runner
	// hosts are the nodes that joined, for the clean-up.
	hosts []string
}

// startP2 starts the services (or joins running ones), the clusters, a
// runner for the management cluster and the operator with production's
// pool resync. Stop it with stop.
func startP2(ctx context.Context, logs io.Writer) (_ *p2Stack, err error) {
	cloud, release, err := openstacktest.StartWithNova(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the OpenStack services: %w", err)
	}
	env, err := testenv.Start(ctx, testenv.Options{ComputeClusters: 1})
	if err != nil {
		release()
		return nil, err
	}
	st, err := newStack(env)
	if err != nil {
		_ = env.Stop()
		release()
		return nil, err
	}
	dir, err := os.MkdirTemp("", "anvil-bench-p2-")
	if err != nil {
		_ = env.Stop()
		release()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &p2Stack{Stack: st, cloud: cloud, compute: env.Compute[0], runners: cancel, runCtx: runCtx, stateDir: dir}
	s.release = release
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
	if err := s.startRunner(env.Management, podrunner.Node{Name: "p2-mgmt-" + benchRun}); err != nil {
		return nil, err
	}
	ep := cloud.Endpoints
	hosts, err := keystonepolicy.EntriesFor(ep[localcloud.KeystoneURL], ep[localcloud.KeystonePublicURL])
	if err != nil {
		return nil, err
	}
	err = s.startOperator(ctx, logs, func(o *operator.Options) { o.AllowedKeystoneHosts = hosts })
	return s, err
}

// benchRun makes host and zone names unique per run, so that a run never
// meets an earlier run's Nova hosts or aggregates in the shared services.
var benchRun = strconv.FormatInt(time.Now().Unix()%100000, 10)

// startRunner registers nodes on a cluster through a pod runner whose
// processes trust the local Keystone's CA, as a node trusts its cloud's.
func (s *p2Stack) startRunner(c *testenv.Cluster, nodes ...podrunner.Node) error {
	r, err := podrunner.New(podrunner.Options{
		Config: c.Config, Nodes: nodes, StateDir: filepath.Join(s.stateDir, c.Name),
		Env:    map[string]string{"REQUESTS_CA_BUNDLE": s.cloud.Endpoints[localcloud.KeystoneCA]},
		Logger: logr.Discard(),
	})
	if err != nil {
		return err
	}
	if err := r.Start(s.runCtx); err != nil {
		return err
	}
	s.started = append(s.started, r)
	return nil
}

// stop stops the runners and their processes, the clusters and, when this
// run started them, the services.
func (s *p2Stack) stop() {
	s.runners()
	for _, r := range s.started {
		_ = r.Wait()
	}
	_ = s.Env.Stop()
	s.release()
	_ = os.RemoveAll(s.stateDir)
}

// p2PoolKey is the label that selects the pool's nodes.
const p2PoolKey = "openstack.c5c3.io/nova-compute-pool"

// createP2Pool creates the pool of the ControlPlane's Nova on the compute
// cluster, selecting the nodes labelled for it.
func (s *p2Stack) createP2Pool(ctx context.Context, cp, name string) error {
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}}
	p.Spec.NovaRef.Name = cp + c5c3v1alpha1.NovaSuffix
	p.Spec.NodeSelector = map[string]string{p2PoolKey: name}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: s.compute.Name}
	p.Spec.Libvirt.VirtType = "kvm"
	return s.Env.Management.Client.Create(ctx, p)
}
