package guidecheck

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The user guide's two tables of exemptions. Each row names the start of
// what it exempts and says why; a row without a reason exempts nothing.
const (
	// CommandSection lists the guide's commands the devstack does not run.
	CommandSection = "Commands the devstack does not run"
	// ManifestSection lists the guide's manifests, or fields of them, the
	// scripts do not apply as written.
	ManifestSection = "Manifests the devstack does not apply as written"
)

// Inputs names the files one check reads.
type Inputs struct {
	// Seed is the guide's source text. It is optional: a machine without
	// it checks the stored copies below, and with it they must match it.
	Seed string
	// Commands is the stored list of the guide's commands, one a line.
	Commands string
	// Manifests is the stored copy of the guide's YAML documents,
	// separated by `---` lines.
	Manifests string
	// Guide is the user guide in docs/ whose tables exempt commands and
	// manifests.
	Guide string
	// Scripts are the end-to-end scripts that run the guide.
	Scripts []string
}

// Report is what one check found.
type Report struct {
	// Commands and Manifests count what the guide holds.
	Commands, Manifests int
	// CommandExemptions and ManifestExemptions count the rows of the
	// user guide's tables.
	CommandExemptions, ManifestExemptions int
	// NotRun are the commands neither run nor exempt.
	NotRun []string
	// NotApplied are the manifests, or fields of them, neither applied as
	// written nor exempt.
	NotApplied []string
	// Unrecognized are the guide's lines that look like a command of a
	// tool the check does not know, so it cannot tell whether they run.
	Unrecognized []string
}

// Failed tells whether anything of the guide is left unchecked.
func (r Report) Failed() bool {
	return len(r.NotRun)+len(r.NotApplied)+len(r.Unrecognized) > 0
}

// Check compares the guide with the scripts: every command must run in
// one of them and every manifest must be applied by one as written,
// unless the user guide says why not.
func Check(in Inputs) (Report, error) {
	var r Report
	seed, err := readSeed(in.Seed)
	if err != nil {
		return r, err
	}
	commands, err := stored(in.Commands, seed, "\n", Extract)
	if err != nil {
		return r, err
	}
	docs, err := stored(in.Manifests, seed, "\n---\n", func(text string) []string { return Documents(Blocks(text)) })
	if err != nil {
		return r, err
	}
	guide, err := Parse(docs)
	if err != nil {
		return r, fmt.Errorf("%s: %w", in.Manifests, err)
	}
	md, err := os.ReadFile(in.Guide)
	if err != nil {
		return r, err
	}
	var texts []string
	var applied []Manifest
	for _, p := range in.Scripts {
		raw, err := os.ReadFile(p)
		if err != nil {
			return r, err
		}
		texts = append(texts, string(raw))
		m, err := Parse(Documents(AppliedBlocks(string(raw))))
		if err != nil {
			return r, fmt.Errorf("%s: %w", p, err)
		}
		applied = append(applied, m...)
	}
	cmdExempt := Exemptions(string(md), CommandSection)
	docExempt := Exemptions(string(md), ManifestSection)
	r = Report{
		Commands: len(commands), Manifests: len(guide),
		CommandExemptions: len(cmdExempt), ManifestExemptions: len(docExempt),
		NotRun:     Missing(commands, texts, cmdExempt),
		NotApplied: CompareManifests(guide, applied, docExempt),
	}
	if seed != nil {
		r.Unrecognized = Unrecognized(*seed)
	}
	return r, nil
}

// Update rewrites the stored commands and manifests from the seed, and
// returns how many of each it wrote.
func Update(in Inputs) (commands, manifests int, err error) {
	seed, err := readSeed(in.Seed)
	if err != nil {
		return 0, 0, err
	}
	if seed == nil {
		return 0, 0, fmt.Errorf("updating needs the seed %q", in.Seed)
	}
	cmds := Extract(*seed)
	docs := Documents(Blocks(*seed))
	if err := os.WriteFile(in.Commands, []byte(strings.Join(cmds, "\n")+"\n"), 0o644); err != nil {
		return 0, 0, err
	}
	return len(cmds), len(docs), os.WriteFile(in.Manifests, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
}

// readSeed returns the seed's text, or nil when no seed is named or the
// named file does not exist on this machine.
func readSeed(path string) (*string, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := string(raw)
	return &s, nil
}

// stored reads a stored list whose items sep separates and, with a seed,
// requires it to equal what from finds in the seed now: a guide that
// changed fails until the copy is updated and the new items covered.
func stored(path string, seed *string, sep string, from func(string) []string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	items := strings.Split(strings.TrimRight(string(raw), "\n"), sep)
	if seed != nil && !slices.Equal(items, from(*seed)) {
		return nil, fmt.Errorf("%s no longer matches the seed; run anvil-dev guide-check --update and cover what is new", path)
	}
	return items, nil
}
