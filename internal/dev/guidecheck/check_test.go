package guidecheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	checkSeed = "Apply it:\n\nkubectl apply -f - <<EOF\nkind: Pool\nmetadata:\n  name: a\nspec:\n  port: 443\nEOF\nchainsaw test --test-dir x\n"
	checkMD   = "# Guide\n\n## " + CommandSection + "\n\n| `chainsaw test` | upstream's suite |\n\n## " +
		ManifestSection + "\n\n| `Pool a spec.port` | the devstack listens on 8443 |\n"
	checkScript = "kubectl apply -f - <<EOF >/dev/null\nkind: Pool\nmetadata:\n  name: a\nspec:\n  port: 8443\nEOF\n"
)

// writeInputs writes a seed, a user guide and one script into a new
// directory, stores the seed's lists there with Update, and names them.
func writeInputs(t *testing.T, seed, md, script string) Inputs {
	t.Helper()
	dir := t.TempDir()
	in := Inputs{
		Seed: filepath.Join(dir, "seed.txt"), Commands: filepath.Join(dir, "commands.txt"),
		Manifests: filepath.Join(dir, "manifests.yaml"), Guide: filepath.Join(dir, "guide.md"),
		Scripts: []string{filepath.Join(dir, "e2e.sh")},
	}
	for path, text := range map[string]string{in.Seed: seed, in.Guide: md, in.Scripts[0]: script} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Update(in); err != nil {
		t.Fatal(err)
	}
	return in
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name               string
		seed, md, script   string
		notRun, notApplied []string
		unrecognized       []string
		failed             bool
	}{
		{name: "run, applied or exempt", seed: checkSeed, md: checkMD, script: checkScript},
		{name: "no exemptions",
			seed: checkSeed, md: "# Guide\n", script: checkScript, failed: true,
			notRun:     []string{"chainsaw test --test-dir x"},
			notApplied: []string{"Pool a spec.port: the guide has 443, the scripts 8443"}},
		{name: "the script applies nothing",
			seed: checkSeed, md: checkMD, script: "kubectl apply -f pool.yaml\n", failed: true,
			notRun:     []string{"kubectl apply -f - <<EOF"},
			notApplied: []string{"Pool a: no script applies it"}},
		{name: "a tool the check does not know",
			seed: checkSeed + "skopeo copy a b\n", md: checkMD, script: checkScript, failed: true,
			unrecognized: []string{"skopeo copy a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Check(writeInputs(t, tt.seed, tt.md, tt.script))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.NotRun, tt.notRun) || !slices.Equal(r.NotApplied, tt.notApplied) ||
				!slices.Equal(r.Unrecognized, tt.unrecognized) || r.Failed() != tt.failed {
				t.Errorf("Check = %+v, want not run %q, not applied %q, unrecognized %q, failed %v",
					r, tt.notRun, tt.notApplied, tt.unrecognized, tt.failed)
			}
		})
	}
}

// TestCheckStoredCopies shows the stored lists standing in for a seed that
// is absent, and failing once the seed they were taken from changed.
func TestCheckStoredCopies(t *testing.T) {
	in := writeInputs(t, checkSeed, checkMD, checkScript)
	if err := os.Remove(in.Seed); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(in); err != nil || r.Failed() || r.Commands != 2 || r.Manifests != 1 {
		t.Errorf("without the seed: Check = %+v, %v; want 2 commands and 1 manifest, all covered", r, err)
	}
	for _, changed := range []string{
		strings.Replace(checkSeed, "port: 443", "port: 80", 1),
		checkSeed + "kubectl get pods\n",
	} {
		if err := os.WriteFile(in.Seed, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Check(in); err == nil || !strings.Contains(err.Error(), "no longer matches the seed") {
			t.Errorf("a changed seed: Check error = %v, want one saying the copy no longer matches", err)
		}
	}
	in.Seed = ""
	if _, _, err := Update(in); err == nil {
		t.Error("Update without a seed succeeded")
	}
}

// TestRepository runs the check on this repository's own guide, scripts
// and stored lists, as test/e2e/guide.sh does before it starts a devstack,
// so a change that leaves a command or manifest of the guide uncovered
// fails here already. The seed is compared when this checkout sits beside
// it, as on the development machine; elsewhere the stored lists stand in.
func TestRepository(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	seed := os.Getenv("ANVIL_GUIDE_SEED")
	if seed == "" {
		seed = filepath.Join(root, "..", "shared", "seed", "connect-a-compute-cluster.txt")
	}
	in := Inputs{
		Seed:      seed,
		Commands:  filepath.Join(root, "test", "e2e", "guide-commands.txt"),
		Manifests: filepath.Join(root, "test", "e2e", "guide-manifests.yaml"),
		Guide:     filepath.Join(root, "docs", "guides", "connect-a-compute-cluster.md"),
	}
	for _, s := range []string{"guide.sh", "guide-step1.sh", "guide-steps.sh", "guide-rotation.sh"} {
		in.Scripts = append(in.Scripts, filepath.Join(root, "test", "e2e", s))
	}
	if _, err := os.Stat(seed); err != nil {
		t.Logf("no seed at %s: checking the stored lists", seed)
	}
	r, err := Check(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() {
		t.Errorf("the guide is not covered:\nnot run: %q\nnot applied: %q\nunrecognized: %q", r.NotRun, r.NotApplied, r.Unrecognized)
	}
	if r.Commands == 0 || r.Manifests == 0 {
		t.Errorf("the check read %d commands and %d manifests; the guide has both", r.Commands, r.Manifests)
	}
}
