// Command anvil is Anvil's command-line tool: it registers compute clusters
// and, as the project grows, diagnoses them. The local devstack is a
// development tool and lives in internal/dev/cmd/anvil-dev.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run())
}

// run executes the command line and returns the process exit code; keeping
// it apart from main lets deferred cleanups run before the process exits.
func run() int {
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
		Use:           "anvil",
		Short:         "Anvil runs an OpenStack compute fabric across Kubernetes clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newClusterCommand())
	root.AddCommand(newDiagnoseCommand())
	return root
}
