package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// anvilResources are every Anvil kind, as kstatus is asked about them.
var anvilResources = []schema.GroupVersionResource{
	{Group: "c5c3.io", Version: "v1alpha1", Resource: "controlplanes"},
	{Group: "nova.openstack.c5c3.io", Version: "v1alpha1", Resource: "novas"},
	{Group: "nova.openstack.c5c3.io", Version: "v1alpha1", Resource: "novacomputes"},
	{Group: "ovn.openstack.c5c3.io", Version: "v1alpha1", Resource: "ovncentrals"},
	{Group: "ovn.openstack.c5c3.io", Version: "v1alpha1", Resource: "ovnchassis"},
	{Group: "neutron.openstack.c5c3.io", Version: "v1alpha1", Resource: "neutronmetadataagents"},
}

// newKstatusCommand is `anvil-dev kstatus`: it reads Anvil objects with
// kstatus, the library GitOps tools judge health with, and fails unless
// each reads as --want. The end-to-end guide runs it on the devstack.
func newKstatusCommand() *cobra.Command {
	var kubeContext, want string
	cmd := &cobra.Command{
		Use:   "kstatus [--context NAME] [--want Current[,InProgress]] [RESOURCE/NAMESPACE/NAME...]",
		Short: "Read Anvil objects with kstatus and fail unless each reads as --want",
		Long: `Without arguments every object of every Anvil kind in every namespace is read;
an argument such as novacomputes/openstack/pool-a reads one object. Each line
prints the resource, the object, kstatus's verdict and its message.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
				&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			return checkKstatus(cmd, dyn, strings.Split(want, ","), args)
		},
	}
	cmd.Flags().StringVar(&kubeContext, "context", "", "the kubeconfig context of the management cluster")
	cmd.Flags().StringVar(&want, "want", string(status.CurrentStatus), "the verdicts an object may read, comma-separated: Current, InProgress, Failed")
	return cmd
}

// checkKstatus reads the selected objects and fails unless each reads one
// of want; it fails too when nothing was selected, so a typo cannot pass.
func checkKstatus(cmd *cobra.Command, dyn dynamic.Interface, want []string, args []string) error {
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	var wrong, seen int
	check := func(gvr schema.GroupVersionResource, namespace, name string) error {
		u, err := dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		res, err := status.Compute(u)
		if err != nil {
			return err
		}
		seen++
		if !slices.Contains(want, string(res.Status)) {
			wrong++
		}
		fmt.Fprintf(out, "%s\t%s/%s\t%s\t%s\n", gvr.Resource, namespace, name, res.Status, res.Message)
		return nil
	}
	for _, a := range args {
		parts := strings.Split(a, "/")
		if len(parts) != 3 {
			return fmt.Errorf("%q: want RESOURCE/NAMESPACE/NAME", a)
		}
		gvr, ok := resourceNamed(parts[0])
		if !ok {
			return fmt.Errorf("%q is not an Anvil resource", parts[0])
		}
		if err := check(gvr, parts[1], parts[2]); err != nil {
			return err
		}
	}
	if len(args) == 0 {
		for _, gvr := range anvilResources {
			list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, item := range list.Items {
				if err := check(gvr, item.GetNamespace(), item.GetName()); err != nil {
					return err
				}
			}
		}
	}
	switch {
	case seen == 0:
		return fmt.Errorf("no Anvil object was read")
	case wrong > 0:
		return fmt.Errorf("%d of %d objects do not read %s", wrong, seen, strings.Join(want, " or "))
	}
	return nil
}

// resourceNamed finds an Anvil resource by its plural name.
func resourceNamed(name string) (schema.GroupVersionResource, bool) {
	for _, gvr := range anvilResources {
		if gvr.Resource == name {
			return gvr, true
		}
	}
	return schema.GroupVersionResource{}, false
}
