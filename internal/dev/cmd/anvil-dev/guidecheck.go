package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/anvil/anvil/internal/dev/guidecheck"
)

// newGuideCheckCommand is `anvil-dev guide-check`: it fails when a command
// of the guide "Connect a compute cluster" is run by none of the given
// scripts, or a manifest of it is applied by none as written, and the user
// guide gives no reason for leaving it out.
func newGuideCheckCommand() *cobra.Command {
	var in guidecheck.Inputs
	var update bool
	cmd := &cobra.Command{
		Use:   "guide-check --commands FILE --manifests FILE --guide FILE SCRIPT...",
		Short: "Check that end-to-end scripts run every command and apply every manifest of the guide, or the guide says why not",
		Long: `The commands of the guide are kept, one per line, in --commands, and its YAML
documents in --manifests. With --seed naming the guide's source text, both are
first compared with what that text holds now (and rewritten with --update).

Every listed command must then appear in one of the scripts, placeholders such
as <node> matching any word, unless a row of the table under
"` + guidecheck.CommandSection + `" in --guide starts it and gives a reason.

Every YAML document must equal, field by field, one that a script feeds to
kubectl apply through a here-document, found by its kind and name, unless a row
of the table under "` + guidecheck.ManifestSection + `" starts its label
("Kind name", or a fragment's first line) or "label field.path" and gives a
reason. A seed line that looks like a command of a tool the check does not know
fails the check too.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, scripts []string) error {
			in.Scripts = scripts
			out := cmd.OutOrStdout()
			if update {
				cmds, docs, err := guidecheck.Update(in)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %d commands to %s and %d manifests to %s\n", cmds, in.Commands, docs, in.Manifests)
				return nil
			}
			r, err := guidecheck.Check(in)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%d commands in the guide, %d exempt by %s, %d not run\n", r.Commands, r.CommandExemptions, in.Guide, len(r.NotRun))
			for _, m := range r.NotRun {
				fmt.Fprintln(out, "  not run:", m)
			}
			fmt.Fprintf(out, "%d manifests in the guide, %d exemptions in %s, %d not applied as written\n", r.Manifests, r.ManifestExemptions, in.Guide, len(r.NotApplied))
			for _, m := range r.NotApplied {
				fmt.Fprintln(out, "  not applied:", m)
			}
			for _, m := range r.Unrecognized {
				fmt.Fprintln(out, "  a command of a tool the check does not know:", m)
			}
			if r.Failed() {
				return fmt.Errorf("the guide's commands or manifests are neither run nor explained in %s (see above)", in.Guide)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Commands, "commands", "test/e2e/guide-commands.txt", "the guide's commands, one per line")
	cmd.Flags().StringVar(&in.Manifests, "manifests", "test/e2e/guide-manifests.yaml", "the guide's YAML documents, separated by --- lines")
	cmd.Flags().StringVar(&in.Seed, "seed", "", "the guide's source text; when set and present, --commands and --manifests must match it")
	cmd.Flags().BoolVar(&update, "update", false, "rewrite --commands and --manifests from --seed")
	cmd.Flags().StringVar(&in.Guide, "guide", "docs/guides/connect-a-compute-cluster.md", "the user guide whose tables exempt commands and manifests")
	return cmd
}
