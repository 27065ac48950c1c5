package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/clusterreg"
	"github.com/anvil/anvil/internal/novadb"
)

func newDiagnoseCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diagnose",
		Short: "Read what OpenStack keeps out of its APIs, to find a misbehaving host",
	}
	cmd.AddCommand(newFailedBuildsCommand())
	return cmd
}

// failedBuildsFlags holds what the failed-builds command reads from its
// flags.
type failedBuildsFlags struct {
	kubeconfig  string
	context     string
	novaContext string
	namespace   string
	nova        string
	dbAddress   string
	timeout     time.Duration
}

func newFailedBuildsCommand() *cobra.Command {
	f := &failedBuildsFlags{}
	cmd := &cobra.Command{
		Use:   "failed-builds [--nova NAME] [-n NAMESPACE]",
		Short: "Show each Nova host's failed_builds counter, its pool and whether its service is disabled",
		Long: `failed-builds reads the failed_builds counter nova-compute keeps per host in
the cell database: builds that ended FAILED or RESCHEDULED there since the
last build that succeeded. No OpenStack API returns it.

The command reads the Nova, its pools, and the cell database's credentials
from the Secret the Nova's spec.database.secretRef names, then connects to
the database itself. The password is read through the kubeconfig only: it is
never a flag and never printed. The DISABLED column comes from the cell's
services table.

The database is dialled at the Nova's spec.database host and port. From
outside the cluster that name may not resolve; forward a port to the
database (kubectl port-forward) and pass --db-address 127.0.0.1:<port>.`,
		Example: `  anvil diagnose failed-builds -n openstack
  anvil diagnose failed-builds --nova controlplane-nova -n openstack --db-address 127.0.0.1:13306`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFailedBuilds(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "Path of the kubeconfig (default: $KUBECONFIG, then ~/.kube/config).")
	fl.StringVar(&f.context, "context", "", "Kubeconfig context of the management cluster (default: the current context).")
	fl.StringVar(&f.novaContext, "nova-context", "", "Kubeconfig context of the cluster that holds the Nova's database Secret, for a Nova placed on a target cluster (default: --context).")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "Namespace of the Nova (default: the context's namespace).")
	fl.StringVar(&f.nova, "nova", "", "Name of the Nova (default: the only Nova in the namespace).")
	fl.StringVar(&f.dbAddress, "db-address", "", "host:port to dial instead of the Nova's spec.database host and port, such as a port-forward.")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "How long the whole command may take.")
	return cmd
}

// runFailedBuilds reads everything, then prints the table.
func runFailedBuilds(ctx context.Context, f *failedBuildsFlags, out io.Writer) error {
	// Checked before any cluster is touched, like the register command's
	// flags: an explicit zero is a mistake, not a wish to wait forever.
	if f.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	mgmt, namespace, err := kubeClient(f.kubeconfig, f.context, f.namespace)
	if err != nil {
		return fmt.Errorf("management cluster: %w", err)
	}
	nova, err := findNova(ctx, mgmt, namespace, f.nova)
	if err != nil {
		return err
	}
	// A Nova placed on a target cluster keeps its database Secret there,
	// where the Nova controller reads it; the Nova object itself stays on
	// the management cluster.
	secrets := mgmt
	if f.novaContext != "" {
		if secrets, _, err = kubeClient(f.kubeconfig, f.novaContext, namespace); err != nil {
			return fmt.Errorf("the Nova's cluster: %w", err)
		}
	}
	cfg, err := cellConfig(ctx, secrets, nova, f.dbAddress)
	if err != nil {
		return err
	}
	pools := &novav1alpha1.NovaComputeList{}
	if err := mgmt.List(ctx, pools, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the NovaComputes of %s: %w", namespace, err)
	}
	// Only this Nova's pools: a host name is unique within one Nova, not
	// across Novas that share a namespace.
	var mine []novav1alpha1.NovaCompute
	for _, p := range pools.Items {
		if p.Spec.NovaRef.Name == nova.Name {
			mine = append(mine, p)
		}
	}
	db, err := novadb.Open(cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	// Both reads come from the cell database, so the counter and the
	// disabled flag of a host are from the same moment and the command
	// needs no Keystone credentials.
	counts, warnings, err := db.FailedBuilds(ctx)
	if err != nil {
		return err
	}
	services, err := db.ComputeServices(ctx)
	if err != nil {
		return err
	}
	if err := renderTable(out, buildRows(counts, services, poolHosts(mine))); err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(out, "warning: %s; its counter reads 0\n", w)
	}
	return nil
}

// kubeClient returns a client of a kubeconfig context and the namespace to
// use: the given one, else the context's, else "default".
func kubeClient(kubeconfig, kubeContext, namespace string) (client.Client, string, error) {
	cfg, err := clusterreg.RESTConfig(kubeconfig, kubeContext)
	if err != nil {
		return nil, "", err
	}
	// kubectl's rule: the context's namespace unless one was given.
	if namespace == "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if kubeconfig != "" {
			rules.ExplicitPath = kubeconfig
		}
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
		if namespace, _, err = loader.Namespace(); err != nil {
			return nil, "", err
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := novav1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, cmp.Or(namespace, "default"), err
}

// findNova returns the named Nova, or the only one in the namespace.
func findNova(ctx context.Context, c client.Client, namespace, name string) (*novav1alpha1.Nova, error) {
	if name != "" {
		nova := &novav1alpha1.Nova{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, nova); err != nil {
			return nil, fmt.Errorf("reading Nova %s/%s: %w", namespace, name, err)
		}
		return nova, nil
	}
	list := &novav1alpha1.NovaList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the Novas of %s: %w", namespace, err)
	}
	switch len(list.Items) {
	case 1:
		return &list.Items[0], nil
	case 0:
		return nil, fmt.Errorf("no Nova in namespace %s; pass -n", namespace)
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	return nil, fmt.Errorf("namespace %s has several Novas (%s); pass --nova", namespace, strings.Join(names, ", "))
}

// cellConfig reads the cell database's address and credentials. An
// address override replaces the spec's host and port.
func cellConfig(ctx context.Context, c client.Reader, nova *novav1alpha1.Nova, address string) (novadb.Config, error) {
	cfg, err := novadb.ConfigForNova(ctx, c, nova)
	if err != nil {
		return novadb.Config{}, fmt.Errorf("the Nova %s/%s: %w", nova.Namespace, nova.Name, err)
	}
	// The override is parsed strictly: a bare host would silently dial
	// the default port of some other server.
	if address != "" {
		host, port, err := net.SplitHostPort(address)
		n, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil || host == "" || n == 0 {
			return novadb.Config{}, fmt.Errorf("--db-address %q is not host:port", address)
		}
		cfg.Host, cfg.Port = host, int32(n)
	}
	return cfg, nil
}
