package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil/anvil/internal/dev/guidecheck"
)

// exemptionSection is the heading of the user guide's table of commands
// the devstack does not run, each with its reason.
const exemptionSection = "Commands the devstack does not run"

// newGuideCheckCommand is `anvil-dev guide-check`: it fails when a command
// of the guide "Connect a compute cluster" is run by none of the given
// scripts and the user guide gives no reason for leaving it out.
func newGuideCheckCommand() *cobra.Command {
	var seed, list, guide string
	var update bool
	cmd := &cobra.Command{
		Use:   "guide-check --commands FILE --guide FILE SCRIPT...",
		Short: "Check that end-to-end scripts run every command of the guide, or the guide says why not",
		Long: `The commands of the guide are kept, one per line, in --commands. With --seed
naming the guide's source text, the list is first compared with what that text
holds now (and rewritten with --update). Every listed command must then appear
in one of the scripts, placeholders such as <node> matching any word, unless a
row of the table under "` + exemptionSection + `" in --guide starts it and
gives a reason.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, scripts []string) error {
			commands, err := loadCommands(list, seed, update)
			if err != nil {
				return err
			}
			if update {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %d commands to %s\n", len(commands), list)
				return nil
			}
			md, err := os.ReadFile(guide)
			if err != nil {
				return err
			}
			var texts []string
			for _, p := range scripts {
				raw, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				texts = append(texts, string(raw))
			}
			exempt := guidecheck.Exemptions(string(md), exemptionSection)
			missing := guidecheck.Missing(commands, texts, exempt)
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%d commands in the guide, %d exempt by %s, %d not run\n", len(commands), len(exempt), guide, len(missing))
			for _, m := range missing {
				fmt.Fprintln(out, "  not run:", m)
			}
			if len(missing) > 0 {
				return fmt.Errorf("%d commands of the guide are neither run nor explained under %q in %s", len(missing), exemptionSection, guide)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&list, "commands", "test/e2e/guide-commands.txt", "the guide's commands, one per line")
	cmd.Flags().StringVar(&seed, "seed", "", "the guide's source text; when set and present, --commands must match it")
	cmd.Flags().BoolVar(&update, "update", false, "rewrite --commands from --seed")
	cmd.Flags().StringVar(&guide, "guide", "docs/guides/connect-a-compute-cluster.md", "the user guide whose table exempts commands")
	return cmd
}

// loadCommands reads the stored list, checking it against the seed when
// one is given and exists.
func loadCommands(list, seed string, update bool) ([]string, error) {
	var fromSeed []string
	if seed != "" {
		raw, err := os.ReadFile(seed)
		switch {
		case err == nil:
			fromSeed = guidecheck.Extract(string(raw))
		case errors.Is(err, os.ErrNotExist) && !update:
			// A machine without the guide's source checks the stored list.
		default:
			return nil, err
		}
	}
	if update {
		if fromSeed == nil {
			return nil, errors.New("--update needs --seed")
		}
		return fromSeed, os.WriteFile(list, []byte(strings.Join(fromSeed, "\n")+"\n"), 0o644)
	}
	raw, err := os.ReadFile(list)
	if err != nil {
		return nil, err
	}
	stored := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if fromSeed != nil && !slices.Equal(stored, fromSeed) {
		return nil, fmt.Errorf("%s no longer matches %s; run anvil-dev guide-check --seed %s --update and cover the new commands", list, seed, seed)
	}
	return stored, nil
}
