package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/anvil/anvil/internal/dev/devstack"
)

// devstackFlags are shared by every devstack subcommand, so that status and
// down find the stack that up started.
type devstackFlags struct {
	root            string
	dir             string
	computeClusters int
	openstack       bool
	operator        string
}

func (f *devstackFlags) stack(cmd *cobra.Command) (*devstack.Stack, error) {
	return devstack.New(devstack.Options{
		Root:            f.root,
		Dir:             f.dir,
		ComputeClusters: f.computeClusters,
		OpenStack:       f.openstack,
		OperatorMode:    f.operator,
		Out:             cmd.OutOrStdout(),
	})
}

// run adapts a Stack method to a command that works on an existing stack:
// status and down read what up recorded, so the cluster count does not
// matter to them.
func (f *devstackFlags) run(method func(*devstack.Stack, context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		f.computeClusters = 1
		s, err := f.stack(cmd)
		if err != nil {
			return err
		}
		return method(s, cmd.Context())
	}
}

func newDevstackCommand() *cobra.Command {
	f := &devstackFlags{}
	cmd := &cobra.Command{
		Use:   "devstack",
		Short: "Run a local management cluster, compute clusters and the operator",
		Long: `The devstack runs everything on this machine as plain processes: kwokctl
clusters built from the pinned Kubernetes binaries (a management cluster "mgmt"
and compute clusters "compute-a", "compute-b", ...), hypervisor nodes with zone
labels, Anvil's CRDs, the registration Secrets, and the operator, installed from
its chart.

By default it also runs Keystone, Placement and Nova from Debian packages
(hack/openstack/openstack.sh) and a pod runner per compute cluster, whose nodes
run nova-compute and nova-manage pods as local processes against them. With
--openstack=false, kwok simulates the nodes and every pod instead.`,
	}
	cmd.PersistentFlags().StringVar(&f.root, "root", ".", "Path of the Anvil checkout.")
	cmd.PersistentFlags().StringVar(&f.dir, "state-dir", "", "Directory for the devstack's state (default <root>/.devstack).")

	up := &cobra.Command{
		Use:   "up",
		Short: "Start the devstack, or repair it; safe to run again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.stack(cmd)
			if err != nil {
				return err
			}
			return s.Up(cmd.Context())
		},
	}
	up.Flags().IntVar(&f.computeClusters, "compute-clusters", 1, "Number of compute clusters (compute-a, compute-b, ...).")
	up.Flags().BoolVar(&f.openstack, "openstack", true, "Run the OpenStack services and the pod runners; false leaves the nodes to kwok.")
	up.Flags().StringVar(&f.operator, "operator", devstack.OperatorModeChart, "How the operator runs: "+devstack.OperatorModeChart+
		" installs charts/anvil-operator and the management cluster's pod runner runs its pod as the local binary under the chart's ServiceAccount; "+
		devstack.OperatorModeProcess+" runs it as a background process with the admin kubeconfig, for debugging (needed with --openstack=false).")

	status := &cobra.Command{
		Use:   "status",
		Short: "Report each component of the devstack",
		Args:  cobra.NoArgs,
		RunE:  f.run((*devstack.Stack).Status),
	}

	down := &cobra.Command{
		Use:   "down",
		Short: "Stop everything up started and remove the state",
		Args:  cobra.NoArgs,
		RunE:  f.run((*devstack.Stack).Down),
	}
	cmd.AddCommand(up, status, down, newFixturesCommand(f))
	return cmd
}

// newFixturesCommand is `devstack fixtures`: the objects K-ORC creates for
// the hypervisor operator in production, made directly on the devstack.
func newFixturesCommand(f *devstackFlags) *cobra.Command {
	var opts devstack.FixturesOptions
	cmd := &cobra.Command{
		Use:   "fixtures",
		Short: "Create the hypervisor operator's OpenStack fixtures of the guide's step 7; safe to run again",
		Long: `fixtures creates, in the devstack's OpenStack services, what K-ORC creates for
the hypervisor operator in production (step 7 of "Connect a compute cluster")
and what the guide's failed-builds section boots with:

  domain cc3test, project test in it, and the role admin for the user
  hypervisor-operator (domain Default) on that project;
  flavor ID 1 (m1.tiny) and flavor hvo-smoke-test;
  image cirros-kvm, in the Glance stub;
  networks hvo-smoke-test and lab-net, each with a subnet of the same name.

An object that already exists under that name (flavor 1: that ID) is kept as
it is, and the output says "created" or "kept" for each. The volume type
premium is skipped: the devstack runs no Cinder.

The user hypervisor-operator appears when the ControlPlane creates the
hypervisor operator's account, in step 2 of the guide. Before that the
command creates everything else, then stops with an error saying so. With
--skip-role-assignment it leaves out the assignment and succeeds; run it
again without the flag after step 2.

It needs the OpenStack services running and the sample ControlPlane's Nova in
the catalog (make devstack). Like every devstack command it uses the one
service set of the checkout, whatever --state-dir says.`,
		Args: cobra.NoArgs,
		RunE: f.run(func(s *devstack.Stack, ctx context.Context) error { return s.Fixtures(ctx, opts) }),
	}
	cmd.Flags().BoolVar(&opts.SkipRoleAssignment, "skip-role-assignment", false,
		"Leave out the admin role of the user hypervisor-operator on project test, for a run before step 2 creates the user.")
	return cmd
}
