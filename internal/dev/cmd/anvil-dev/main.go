// Command anvil-dev runs the development machinery that does not ship with
// Anvil: the local devstack (`anvil-dev devstack
// up|status|down|fixtures`) and the hypervisor's part for a test instance
// on it (`anvil-dev vm plug|curl|unplug`).
// The user CLI, cmd/anvil, keeps only the commands an operator of a real
// fabric needs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	os.Exit(run())
}

// run executes the command line and returns the process exit code; keeping
// it apart from main lets deferred cleanups run before the process exits.
func run() int {
	// The devstack builds controller-runtime clients, which log through
	// controller-runtime's global logger. Unset, that logger prints a
	// warning with a stack trace into the progress output once the command
	// has run for 30 seconds. The command reports every failure through its
	// returned errors, so the clients' own log is not needed.
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "anvil-dev",
		Short:         "Anvil's development tools: the local devstack and its test instances",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newDevstackCommand(), newVMCommand(), newGuideCheckCommand(), newKstatusCommand())
	return root
}
