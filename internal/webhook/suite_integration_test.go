package webhook_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/anvil/anvil/internal/testenv"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
)

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
	mgr, err := ctrl.NewManager(e.Management.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Logger:                 zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(e.Management.WebhookServerOptions()),
	})
	if err != nil {
		return err
	}
	if err := anvilwebhook.SetupControlPlaneWebhook(mgr); err != nil {
		return err
	}
	if err := anvilwebhook.SetupNovaWebhook(mgr); err != nil {
		return err
	}
	if err := anvilwebhook.SetupNovaComputeWebhook(mgr); err != nil {
		return err
	}
	go func() {
		// The manager runs until the test binary exits; the environment's
		// apiserver stops first, which the webhook server does not mind.
		if err := mgr.Start(context.Background()); err != nil {
			panic(err)
		}
	}()
	// The apiserver calls the webhook on the first create, so it must be
	// listening before any test proceeds.
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return mgr.GetWebhookServer().StartedChecker()(nil) == nil, nil
	})
}
