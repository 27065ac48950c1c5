package testenv_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/anvil/anvil/internal/dev/testenv"
)

// A manager whose webhook server cannot bind its port fails StartManager
// with the reason, instead of ending the test binary with a panic that
// would leave the package's clusters running.
func TestIntegrationStartManagerReportsAFailedStart(t *testing.T) {
	e := testenv.Require(t, env)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	opts := e.Management.WebhookServerOptions()
	opts.Host = "127.0.0.1"
	opts.Port = taken.Addr().(*net.TCPAddr).Port
	mgr, err := ctrl.NewManager(e.Management.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(opts),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = testenv.StartManager(mgr, nil)
	if err == nil || !strings.Contains(err.Error(), "stopped while starting") || !strings.Contains(err.Error(), strconv.Itoa(opts.Port)) {
		t.Fatalf("StartManager = %v, want the failed bind of port %d", err, opts.Port)
	}
}
