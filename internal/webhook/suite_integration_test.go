package webhook_test

import (
	"os"
	"sync"
	"testing"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/keystonepolicy"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// allowedKeystone is the one Keystone host the suite's operator admits
// besides a ControlPlane's own.
const allowedKeystone = "keystone.openstack.svc"

// controlPlaneKeystones are the ControlPlane webhook's allowed Keystone
// hosts: the in-cluster one over plain http, on its port, and the public
// one over https. The Nova webhook keeps allowedKeystone alone, so that a
// Nova's rules are seen apart from the ControlPlane's.
var controlPlaneKeystones = []string{"http://" + allowedKeystone + ":5000", "keystone.example.com"}

var (
	env     *testenv.Environment
	started sync.Once
	// startErr keeps the first start's failure, so that every later test
	// fails with it instead of running against no webhook server.
	startErr error
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

// startWebhooks serves Anvil's admission webhooks for the management
// cluster, once per package. Every webhook in config/webhook is registered:
// the apiserver fails closed, so a kind whose webhook nobody serves cannot
// be created at all.
func startWebhooks(t *testing.T) *testenv.Environment {
	t.Helper()
	e := testenv.Require(t, env)
	started.Do(func() { startErr = runManager(e) })
	if startErr != nil {
		t.Fatal(startErr)
	}
	return e
}

func runManager(e *testenv.Environment) error {
	mgr, err := e.NewManager(os.Stderr)
	if err != nil {
		return err
	}
	if err := anvilwebhook.SetupControlPlaneWebhook(mgr, keystonepolicy.Policy{AllowedHosts: controlPlaneKeystones}); err != nil {
		return err
	}
	if err := anvilwebhook.SetupNovaWebhook(mgr, keystonepolicy.Policy{AllowedHosts: []string{allowedKeystone}}); err != nil {
		return err
	}
	if err := anvilwebhook.SetupNovaComputeWebhook(mgr, workloadpolicy.Policy{}); err != nil {
		return err
	}
	if err := anvilwebhook.SetupOVNCentralWebhook(mgr); err != nil {
		return err
	}
	if err := anvilwebhook.SetupOVNChassisWebhook(mgr, workloadpolicy.Policy{}); err != nil {
		return err
	}
	if err := anvilwebhook.SetupNeutronMetadataAgentWebhook(mgr, workloadpolicy.Policy{}); err != nil {
		return err
	}
	return testenv.StartManager(mgr, nil)
}
