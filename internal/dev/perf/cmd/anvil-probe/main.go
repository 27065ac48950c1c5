// Command anvil-probe measures, on a running devstack, how long a change of
// a ControlPlane's spec takes to reach the contract's mirror on a compute
// cluster, against a direct write and watch of one Secret there. It prints
// the ratio and its target, and fails only when something does not
// converge. See docs/reference/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/anvil/anvil/internal/dev/perf"
)

func main() {
	// A flag set of its own: controller-runtime, which the perf package
	// links, registers --kubeconfig on the global one.
	fs := flag.NewFlagSet("anvil-probe", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", defaultKubeconfig(), "the devstack's kubeconfig")
	mgmt := fs.String("management-context", "anvil-mgmt", "the context of the management cluster")
	compute := fs.String("compute-context", "anvil-compute-a", "the context of the compute cluster whose mirror is watched")
	namespace := fs.String("namespace", "openstack", "the namespace of the ControlPlane and of the mirror")
	cp := fs.String("controlplane", "controlplane", "the ControlPlane to change")
	cluster := fs.String("cluster", "compute-a", "the compute cluster's registered name, for a pool the probe adds while the Nova has none there")
	samples := fs.Int("samples", 20, "counted changes, after 3 warm-up ones")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *kubeconfig, *mgmt, *compute, perf.ProbeOptions{Namespace: *namespace, ControlPlane: *cp, Cluster: *cluster, Samples: *samples})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "anvil-probe:", err)
		os.Exit(1)
	}
}

// defaultKubeconfig is $KUBECONFIG, else the devstack's own file.
func defaultKubeconfig() string {
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	return filepath.Join(".devstack", "kubeconfig")
}

func run(ctx context.Context, kubeconfig, mgmtContext, computeContext string, o perf.ProbeOptions) error {
	mgmt, err := restConfig(kubeconfig, mgmtContext)
	if err != nil {
		return err
	}
	compute, err := restConfig(kubeconfig, computeContext)
	if err != nil {
		return err
	}
	if o.Management, err = dynamic.NewForConfig(mgmt); err != nil {
		return err
	}
	if o.Compute, err = kubernetes.NewForConfig(compute); err != nil {
		return err
	}
	res, err := perf.ProbeDevstack(ctx, o, os.Stdout)
	if err != nil {
		return err
	}
	verdict := "met"
	if res.Ratio() > perf.ProbeTarget {
		verdict = "MISSED"
	}
	fmt.Printf("ControlPlane spec change to the mirror: p50 %s p95 %s; direct write and watch: p50 %s p95 %s; %.2fx (target <= %.0fx): %s\n",
		perf.Millis(res.Change.Median()), perf.Millis(res.Change.Percentile(0.95)),
		perf.Millis(res.Direct.Median()), perf.Millis(res.Direct.Percentile(0.95)), res.Ratio(), perf.ProbeTarget, verdict)
	return nil
}

// restConfig loads one context of the kubeconfig.
func restConfig(path, context string) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
}
