package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/clusterreg"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Manage the compute clusters registered with the management cluster",
	}
	cmd.AddCommand(newClusterRegisterCommand())
	return cmd
}

// clusterRegisterFlags holds what the register command reads from its flags.
type clusterRegisterFlags struct {
	kubeconfig        string
	context           string
	managementContext string
	opts              clusterreg.Options
}

func newClusterRegisterCommand() *cobra.Command {
	f := &clusterRegisterFlags{}
	cmd := &cobra.Command{
		Use:   "register --context <compute-context> --name <cluster>",
		Short: "Register a compute cluster with the management cluster",
		Long: `register asks the compute cluster for a token of the ServiceAccount that the
target-cluster-access chart created, builds a kubeconfig from it with the CA
of --context and the token embedded, and writes it as the registration Secret
<clusters-namespace>/<name> on the management cluster. An existing
registration Secret is updated; any other Secret of that name is left alone.

Before it asks for a token, register reads each namespace of --namespaces on
the compute cluster and refuses when one lacks the Pod Security enforce label
the chart sets on the namespaces it creates: baseline or restricted, or
privileged where the chart's account may manage DaemonSets. The chart cannot
label namespaces it did not create (createNamespaces=false), and an
unlabelled namespace would let the registration's token run privileged pods.
The error names each namespace and the kubectl label command that fixes it;
--allow-unlabelled-namespaces registers anyway and prints a warning for each.

The token is bound to the ServiceAccount and expires after --token-expiration
(30 days unless set): uninstalling the chart ends it, and a copy that leaks
stops working on its own. Run register again with --refresh before it
expires, from a scheduled job for instance; --refresh renews only an existing
registration and keeps its namespaces.

Both clusters are reached through contexts of one kubeconfig: --context for
the compute cluster, --management-context (default: the current context) for
the management cluster. The command never prints the token or the
kubeconfig.`,
		Example: `  anvil cluster register --context compute-a --name compute-a \
    --namespaces openstack --management-context mgmt
  anvil cluster register --context compute-a --name compute-a --refresh \
    --management-context mgmt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The flags carry the defaults, so an explicit empty value or
			// zero timeout is refused rather than silently defaulted. Check
			// them before touching either cluster.
			opts := f.opts
			if err := opts.Validate(); err != nil {
				return err
			}
			compute, err := clusterreg.RESTConfig(f.kubeconfig, f.context)
			if err != nil {
				return fmt.Errorf("compute cluster: %w", err)
			}
			mgmtCfg, err := clusterreg.RESTConfig(f.kubeconfig, f.managementContext)
			if err != nil {
				return fmt.Errorf("management cluster: %w", err)
			}
			mgmt, err := client.New(mgmtCfg, client.Options{})
			if err != nil {
				return fmt.Errorf("management cluster: %w", err)
			}
			_, err = clusterreg.Register(cmd.Context(), compute, mgmt, opts, cmd.OutOrStdout())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.context, "context", "", "Kubeconfig context of the compute cluster to register (required).")
	fl.StringVar(&f.opts.ClusterName, "name", "", "Name of the cluster, as targetClusterRef uses it; names the registration Secret (required).")
	fl.StringVar(&f.opts.Namespaces, "namespaces", "", "Comma-separated namespaces Anvil may use on the compute cluster; the same list the chart was installed with. Empty registers the cluster cluster-wide, which an operator engages only with --allow-cluster-wide-registrations.")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "Path of the kubeconfig (default: $KUBECONFIG, then ~/.kube/config).")
	fl.StringVar(&f.managementContext, "management-context", "", "Kubeconfig context of the management cluster (default: the current context).")
	fl.StringVar(&f.opts.ClustersNamespace, "clusters-namespace", clusterreg.DefaultClustersNamespace, "Namespace of the registration Secrets on the management cluster.")
	fl.StringVar(&f.opts.AccessNamespace, "access-namespace", clusterreg.DefaultAccessNamespace, "Namespace on the compute cluster the target-cluster-access chart was installed into.")
	fl.StringVar(&f.opts.ServiceAccount, "service-account", clusterreg.DefaultServiceAccount, "ServiceAccount the chart created; the registration carries a bound token of it.")
	fl.DurationVar(&f.opts.Timeout, "timeout", clusterreg.DefaultTimeout, "How long to wait for the ServiceAccount to exist.")
	fl.DurationVar(&f.opts.TokenExpiration, "token-expiration", clusterreg.DefaultTokenExpiration, "How long the registration's token works, from 10m to 8760h; the apiserver may shorten it.")
	fl.BoolVar(&f.opts.Refresh, "refresh", false, "Renew the token of an existing registration, keeping its namespaces unless --namespaces is given.")
	fl.BoolVar(&f.opts.AllowUnlabelledNamespaces, "allow-unlabelled-namespaces", false, "Register even when a namespace lacks the Pod Security enforce level the access chart sets (baseline or restricted; privileged where the chart grants DaemonSets), printing a warning for each instead of refusing.")
	_ = cmd.MarkFlagRequired("context")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}
