// Command cert-manager-controller runs cert-manager's certificate controllers,
// compiled from the github.com/cert-manager/cert-manager module.
//
// Upstream's own main package (cmd/controller) is a separate Go module whose
// go.mod replaces cert-manager with a relative path, so the Go module proxy
// does not serve it. This file therefore stands in for that main only: it
// parses a few flags and starts the controllers that the module registers,
// through the module's own controller.ContextFactory, exactly as upstream's
// main does. Every reconcile, signature and Secret write is cert-manager's.
//
// Only the controllers for Issuers, ClusterIssuers, Certificates and the
// CA and SelfSigned CertificateRequest issuers are linked in. No ACME, Vault
// or Venafi code is compiled, so the process has nothing to dial but the
// apiserver, and it serves no port: no metrics, health or profiling
// listener. The webhook and cainjector are not built either: the CRDs are
// applied directly, have a single version (no conversion), and nothing here
// needs a CA injected into an API object.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each import registers its controller with controller.Known(), or its
	// issuer implementation with the issuers controllers.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// defaultControllers is every controller linked in. The approver is among
// them because a CertificateRequest is signed only once approved, and
// upstream's default set runs it for cert-manager.io issuers too.
var defaultControllers = []string{
	"issuers", "clusterissuers",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager",
	"certificaterequests-approver", "certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
}

// options are the flags. Their names are upstream's, so that the callers'
// arguments keep their meaning on upstream's binary.
type options struct {
	kubeconfig               string
	controllers              []string
	clusterResourceNamespace string
	leaderElect              bool
	workers                  int
	logging                  *logsapi.LoggingConfiguration
}

func main() {
	logf.InitLogs()
	err := start(os.Args[1:])
	logf.FlushLogs()
	if err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

// start parses the flags and runs until SIGTERM or SIGINT.
func start(args []string) error {
	opts, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(logf.NewContext(ctx, logf.Log, "controller"), opts)
}

func parseFlags(args []string) (*options, error) {
	opts := &options{logging: logsapi.NewLoggingConfiguration()}
	fs := pflag.NewFlagSet("cert-manager-controller", pflag.ContinueOnError)
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig of the apiserver to reconcile (required)")
	fs.StringSliceVar(&opts.controllers, "controllers", defaultControllers, "controllers to run, by name")
	fs.StringVar(&opts.clusterResourceNamespace, "cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers refer to")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false, "must be false: this build runs a single replica")
	fs.IntVar(&opts.workers, "concurrent-workers", 5, "workers per controller")
	logf.AddFlagsNonDeprecated(opts.logging, fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := logf.ValidateAndApply(opts.logging); err != nil {
		return nil, err
	}
	switch {
	case opts.kubeconfig == "":
		// Without it, client-go would fall back to in-cluster settings or
		// localhost:8080; a dev process must name its apiserver.
		return nil, errors.New("--kubeconfig is required")
	case opts.leaderElect:
		return nil, errors.New("--leader-elect=true is not supported: this build runs a single replica")
	case opts.workers < 1:
		return nil, errors.New("--concurrent-workers must be at least 1")
	}
	for _, name := range opts.controllers {
		if !slices.Contains(defaultControllers, name) {
			return nil, fmt.Errorf("unknown controller %q; this build has %s", name, strings.Join(defaultControllers, ","))
		}
	}
	return opts, nil
}

// run starts the selected controllers and the shared informers they asked
// for, and returns when the context ends or a controller fails.
func run(ctx context.Context, opts *options) error {
	log := logf.FromContext(ctx)
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig: opts.kubeconfig,
		// Upstream's defaults; with API Priority and Fairness on, which a
		// current apiserver has, the factory disables client throttling.
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: opts.clusterResourceNamespace},
		CertificateOptions: controller.CertificateOptions{
			// Upstream's defaults for retrying a failed CertificateRequest.
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range opts.controllers {
		construct, ok := controller.Known()[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("creating controller %s: %w", name, err)
		}
		log.Info("starting controller", "controller", name)
		g.Go(func() error { return c.Run(opts.workers, gctx) })
	}
	// Informers start after every controller has asked for its own, the
	// order upstream uses; a factory starts only what was asked for.
	base.SharedInformerFactory.Start(gctx.Done())
	base.KubeSharedInformerFactory.Start(gctx.Done())
	err = g.Wait()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	log.Info("control loops exited")
	return err
}
