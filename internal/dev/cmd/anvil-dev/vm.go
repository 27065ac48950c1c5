package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/anvil/anvil/internal/dev/devstack"
	"github.com/anvil/anvil/internal/dev/vmtest"
)

// vmFlags name a test instance on a devstack node: the node's chassis it
// is plugged into and the Neutron port it stands for.
type vmFlags struct {
	devstack devstackFlags
	cluster  string
	node     string
	port     vmtest.Port
}

// host finds the node's namespace and OVS database in the devstack's
// state.
func (f *vmFlags) host(cmd *cobra.Command) (vmtest.Host, error) {
	f.devstack.computeClusters = 1
	s, err := f.devstack.stack(cmd)
	if err != nil {
		return vmtest.Host{}, err
	}
	if f.port.ID == "" {
		return vmtest.Host{}, errors.New("--port is required")
	}
	return s.NodeHost(f.cluster, f.node), nil
}

// newVMCommand is `anvil-dev vm`: the hypervisor's part for a server that
// Nova's fake driver booted, so that a script can read the server's
// metadata through the real datapath (see package vmtest).
func newVMCommand() *cobra.Command {
	f := &vmFlags{}
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "Play the hypervisor for a server's port on a devstack node",
		Long: `Nova's fake driver plugs nothing. "vm plug" does what the hypervisor would:
it gives the port a network namespace standing for the VM, with a veth into
the node's br-int, the port's MAC and address, and a route to
169.254.169.254 through the network's metadata port. "vm curl" reads a
metadata path from inside, and "vm unplug" removes what plug made. The node
must be the devstack's metadata agent node (` + devstack.MetadataAgentNode() + `), whose chassis
runs the userspace datapath; this takes root.`,
	}
	cmd.PersistentFlags().StringVar(&f.devstack.root, "root", ".", "Path of the Anvil checkout.")
	cmd.PersistentFlags().StringVar(&f.devstack.dir, "state-dir", "", "Directory of the devstack's state (default <root>/.devstack).")
	cmd.PersistentFlags().StringVar(&f.cluster, "cluster", "compute-a", "The node's compute cluster.")
	cmd.PersistentFlags().StringVar(&f.node, "node", devstack.MetadataAgentNode(), "The node whose chassis the port is bound to.")
	cmd.PersistentFlags().StringVar(&f.port.ID, "port", "", "The Neutron port's ID.")

	plug := &cobra.Command{
		Use:   "plug",
		Short: "Plug an instance for the port into the node's br-int",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, err := f.host(cmd)
			if err != nil {
				return err
			}
			i, err := vmtest.Plug(cmd.Context(), host, f.port)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), i.NetNS)
			return nil
		},
	}
	plug.Flags().StringVar(&f.port.MAC, "mac", "", "The port's MAC address.")
	plug.Flags().StringVar(&f.port.IP, "ip", "", "The port's fixed IPv4 address.")
	plug.Flags().StringVar(&f.port.CIDR, "cidr", "", "The subnet's CIDR.")
	plug.Flags().StringVar(&f.port.MetadataIP, "metadata-ip", "", "The address of the network's metadata port (device owner network:distributed).")
	plug.Flags().StringVar(&f.port.Gateway, "gateway", "", "The default route, if any.")

	curl := &cobra.Command{
		Use:   "curl PATH",
		Short: "Print http://169.254.169.254/PATH as the instance reads it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			host, err := f.host(cmd)
			if err != nil {
				return err
			}
			body, err := vmtest.Attach(host, f.port.ID).Curl(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), body)
			return nil
		},
	}

	unplug := &cobra.Command{
		Use:   "unplug",
		Short: "Remove the instance plug made; safe to run again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, err := f.host(cmd)
			if err != nil {
				return err
			}
			return vmtest.Attach(host, f.port.ID).Close(cmd.Context())
		},
	}
	cmd.AddCommand(plug, curl, unplug)
	return cmd
}
