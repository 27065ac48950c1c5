// Command anvil-operator runs Anvil's controllers against a management
// cluster and the compute clusters registered with it.
package main

import (
	"flag"
	"os"

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
