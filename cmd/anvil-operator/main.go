// Command anvil-operator runs Anvil's controllers against a management
// cluster and the compute clusters registered with it.
package main

import (
	"flag"
	"os"

	// Mozilla's roots, pinned by go.sum, for when the image holds no CA
	// file: the image carries nothing from the machine that built it, so
	// its digest is the same on every machine. A CA file mounted at a
	// system path, or named by SSL_CERT_FILE, still takes precedence.
	_ "golang.org/x/crypto/x509roots/fallback"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/anvil/anvil/internal/operator"
)

func main() {
	var opts operator.Options
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "cannot load the management cluster's kubeconfig")
		os.Exit(1)
	}
	mgr, err := operator.NewManager(cfg, &opts)
	if err != nil {
		log.Error(err, "cannot start the operator")
		os.Exit(1)
	}
	if _, err := operator.Setup(ctx, mgr, &opts); err != nil {
		log.Error(err, "cannot set up the operator")
		os.Exit(1)
	}
	log.Info("starting the manager", "clustersNamespace", opts.ClustersNamespace, "webhooks", opts.EnableWebhooks)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}
