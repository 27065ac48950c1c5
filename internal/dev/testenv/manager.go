package testenv

import (
	"context"
	"errors"
	"fmt"
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
//
// A manager that fails while starting (its webhook server cannot bind, for
// one) is an error returned here, so that the test fails and the package
// still stops its clusters; a panic would end the test binary and leave
// them running. A manager that fails later panics: the package's tests
// would otherwise wait on a dead operator.
func StartManager(mgr ctrl.Manager, ready func() bool) error {
	// failed is unbuffered: a failure either reaches the wait below or
	// comes after StartManager returned, never neither.
	failed := make(chan error)
	returned := make(chan struct{})
	go func() {
		// The environment's apiservers stop first at the end, which the
		// manager does not mind.
		err := mgr.Start(context.Background())
		select {
		case failed <- err:
		case <-returned:
			if err != nil {
				panic(err)
			}
		}
	}()
	defer close(returned)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-failed:
			return false, fmt.Errorf("the manager stopped while starting: %w", err)
		default:
		}
		if mgr.GetWebhookServer().StartedChecker()(nil) != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		return ready == nil || ready(), nil
	})
	switch {
	case err != nil && !wait.Interrupted(err):
		return err
	case err != nil:
		return errors.New("the manager did not start: its webhook server does not serve, or it is not ready")
	}
	return nil
}
