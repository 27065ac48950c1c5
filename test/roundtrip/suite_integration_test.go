// Package roundtrip_test proves that every optional field of Anvil's kinds
// can be unset: from a settled object, a field is set and then removed
// again with JSON merge patches, as GitOps does, and the object's children
// must come back to what they were before. The fields come from the CRDs'
// schemas, so a field added without a round trip fails the coverage test.
// Pods run under kwok, so the children are rendered and rolled out without
// OpenStack; what a field changes inside OpenStack is the other suites'.
package roundtrip_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

var (
	env     *testenv.Environment
	logs    = &testenv.LogBuffer{}
	started sync.Once
)

// namespace is where the round trips' objects live.
const namespace = testenv.WorkloadNamespace

func TestMain(m *testing.M) {
	// make test runs only the coverage tests, which need no cluster: they
	// fail when a field or an entry lacks a round trip. The round trips
	// themselves are a long suite of make test-all.
	os.Exit(testenv.Run(m, testenv.Options{Audit: true, Long: "test-all"}, &env))
}

// startOperator runs every controller and the webhooks against the
// management cluster, and kwok's workloads on one node, once per package.
func startOperator(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	started.Do(func() {
		mgr, err := e.NewManager(logs)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Management.StartWorkloads(context.Background(), testenv.Node{Name: "roundtrip-node"}); err != nil {
			t.Fatal(err)
		}
		opts := &operator.Options{EnableWebhooks: true, AllowedKeystoneHosts: []string{
			"keystone.openstack.svc", "keystone.example.com", "http://" + closedKeystone(t),
		}}
		if _, err := operator.Setup(context.Background(), mgr, opts); err != nil {
			t.Fatal(err)
		}
		if err := testenv.StartManager(mgr, nil); err != nil {
			t.Fatal(err)
		}
	})
	return e
}

// closedKeystone is the Keystone of the pools' Novas: a pool dials it, and
// must reach neither a real one nor a resolver off this machine.
func closedKeystone(t *testing.T) string {
	t.Helper()
	return testenv.ClosedAddress(t)
}
