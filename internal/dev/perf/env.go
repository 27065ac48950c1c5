package perf

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
	"github.com/anvil/anvil/internal/targetcluster"
)

// Stack is a management cluster, its compute clusters and the operator,
// run in this process with every controller and webhook, as production
// wires them.
type Stack struct {
	Env      *testenv.Environment
	Registry *targetcluster.Registry
	// Typed clients per cluster, for watches.
	typed map[string]kubernetes.Interface
}

// StartStack starts the clusters and the operator; the operator's log goes
// to logs. Stop the environment with Stack.Env.Stop.
func StartStack(ctx context.Context, computeClusters int, audit bool, logs io.Writer) (*Stack, error) {
	env, err := testenv.Start(ctx, testenv.Options{ComputeClusters: computeClusters, Audit: audit})
	if err != nil {
		return nil, err
	}
	s, err := newStack(env)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	// The Nova of every ControlPlane runs its control plane here: kwok runs
	// its pods and completes its database Jobs on one node.
	if err := env.Management.StartWorkloads(ctx, testenv.Node{Name: "mgmt-node"}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if err := s.startOperator(ctx, logs, nil); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return s, nil
}

// newStack wraps a started environment with typed clients per cluster.
func newStack(env *testenv.Environment) (*Stack, error) {
	s := &Stack{Env: env, typed: map[string]kubernetes.Interface{}}
	for _, c := range append([]*testenv.Cluster{env.Management}, env.Compute...) {
		var err error
		if s.typed[c.Name], err = kubernetes.NewForConfig(c.Config); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// startOperator runs the operator with every controller and webhook; more,
// when set, adjusts its options.
func (s *Stack) startOperator(ctx context.Context, logs io.Writer, more func(*operator.Options)) error {
	mgr, err := s.Env.NewManager(logs)
	if err != nil {
		return err
	}
	opts := &operator.Options{
		ClustersNamespace: s.Env.ClustersNamespace, EnableWebhooks: true, ClusterProbeInterval: time.Second,
		AllowedKeystoneHosts: fixtureKeystoneHosts,
		// testenv registers its compute clusters without a namespaces key.
		AllowClusterWideRegistrations: true,
	}
	if more != nil {
		more(opts)
	}
	s.Registry, err = operator.Setup(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return testenv.StartManager(mgr, func() bool {
		for _, c := range s.Env.Compute {
			if _, err := s.Registry.Resolve(c.Name); err != nil {
				return false
			}
		}
		return true
	})
}

// PutSecret creates or replaces a Secret on a cluster.
func (s *Stack) PutSecret(ctx context.Context, cluster, namespace, name string, data map[string]string) error {
	secrets := s.typed[cluster].CoreV1().Secrets(namespace)
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, StringData: data}
	live, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	live.Data, live.StringData = nil, data
	if _, err := secrets.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating Secret %s/%s on %s: %w", namespace, name, cluster, err)
	}
	return nil
}

// fixtureKeystoneHosts admit the Keystone the fixtures' ControlPlanes
// declare (fixtures.go): in-cluster over plain http and public over https,
// which nothing dials, and the scale benchmark's simulator, which serves
// plain http on a loopback port chosen when it starts (scale_fixtures.go).
var fixtureKeystoneHosts = []string{"http://keystone.openstack.svc:5000", "keystone.bench.invalid", "http://127.0.0.1"}
