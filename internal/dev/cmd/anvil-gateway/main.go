// Command anvil-gateway is the devstack's Gateway API implementation: it
// claims the GatewayClasses of its controller name, writes the status of
// their Gateways and HTTPRoutes, and serves the listeners on a local address;
// see package gateway.
//
//	anvil-gateway --kubeconfig mgmt.kubeconfig --port-map 443=8443
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/anvil/anvil/internal/dev/gateway"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// config is the parsed command line.
type config struct {
	kubeconfig string
	opts       gateway.Options
}

// run executes the command and returns its exit code, so that deferred
// cleanups run before the process exits.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("anvil-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	cfg, err := parseFlags(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "Error:", err)
		return 2
	}
	log := zap.New(zap.UseFlagOptions(&zapOpts)).WithName("gateway")
	ctrllog.SetLogger(log)
	cfg.opts.Logger = log

	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		log.Error(err, "cannot load the kubeconfig")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "controllerName", cfg.opts.ControllerName, "listenAddress", cfg.opts.ListenAddress, "portMap", cfg.opts.PortMap.String())
	if err := gateway.Run(ctx, restConfig, cfg.opts); err != nil {
		log.Error(err, "the gateway stopped")
		return 1
	}
	return 0
}

// parseFlags reads the command line.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	cfg := config{opts: gateway.Options{PortMap: gateway.PortMap{}}}
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster that holds the Gateway API objects (default $KUBECONFIG)")
	fs.StringVar(&cfg.opts.ListenAddress, "listen-address", gateway.DefaultListenAddress, "IP address every listener is served on")
	fs.StringVar(&cfg.opts.ControllerName, "controller-name", gateway.DefaultControllerName, "spec.controllerName of the GatewayClasses to claim")
	fs.Func("port-map", "listener port to host port, as LISTENER=HOST pairs separated by commas, such as 443=8443; repeatable; unmapped ports are served as they are", func(v string) error {
		m, err := gateway.ParsePortMap(v)
		if err != nil {
			return err
		}
		for l, h := range m {
			if _, dup := cfg.opts.PortMap[l]; dup {
				return fmt.Errorf("listener port %d is mapped twice", l)
			}
			cfg.opts.PortMap[l] = h
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if cfg.kubeconfig == "" {
		return cfg, errors.New("--kubeconfig is required (or set KUBECONFIG)")
	}
	return cfg, nil
}
