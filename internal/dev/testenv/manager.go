package testenv

import (
	"context"
	"errors"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// NewManager returns a manager on the management cluster for a package's
// integration tests: it logs to logs, serves no metrics or probes, serves
// webhooks where the installed webhook configurations call them, and skips
// controller-name validation, since a package may set up its controllers
// more than once.
func (e *Environment) NewManager(logs io.Writer) (ctrl.Manager, error) {
	skip := true
	// The operator's requests carry its own user agent, so that a test can
	// tell them from its own in the apiserver's audit log.
	cfg := rest.CopyConfig(e.Management.Config)
	cfg.UserAgent = OperatorUserAgent
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Logger:                 zap.New(zap.WriteTo(logs), zap.UseDevMode(true)),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(e.Management.WebhookServerOptions()),
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
}

// StartManager runs mgr until the test binary exits, and waits until its
// webhook server serves, because the apiserver calls the webhooks on the
// first create, and until ready, if given, holds.
func StartManager(mgr ctrl.Manager, ready func() bool) error {
	go func() {
		// The environment's apiservers stop first at the end, which the
		// manager does not mind.
		if err := mgr.Start(context.Background()); err != nil {
			panic(err)
		}
	}()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if mgr.GetWebhookServer().StartedChecker()(nil) != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		return ready == nil || ready(), nil
	})
	if err != nil {
		return errors.New("the manager did not start: its webhook server does not serve, or it is not ready")
	}
	return nil
}
