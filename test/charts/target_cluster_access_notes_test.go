package charts_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// notesProbe is a template added to a copy of the chart that renders
// NOTES.txt, copied to the chart's root as notes.txt, into a ConfigMap.
// `helm template` never prints NOTES.txt, and `helm install --dry-run`
// asks a cluster for its version; tpl renders the same file with the same
// values and helpers without either.
const notesProbe = `apiVersion: v1
kind: ConfigMap
metadata:
  name: notes-probe
data:
  notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}
`

// renderNotes returns the access chart's install notes for the values in
// args, as release "target-cluster-access" in the release namespace.
func renderNotes(t *testing.T, args ...string) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "target-cluster-access")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(repoRoot(t), accessChart))); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(chart, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"notes.txt":                  notes,
		"templates/notes-probe.yaml": []byte(notesProbe),
	} {
		if err := os.WriteFile(filepath.Join(chart, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	full := append([]string{"template", "target-cluster-access", chart, "--namespace", releaseNamespace,
		"--show-only", "templates/notes-probe.yaml"}, args...)
	stdout, stderr, err := helm(t, full...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(full, " "), err, stderr)
	}
	objs := decode(t, stdout)
	if len(objs) != 1 {
		t.Fatalf("the notes probe rendered %d objects, want 1", len(objs))
	}
	text, _, _ := unstructured.NestedString(objs[0].Object, "data", "notes")
	if text == "" {
		t.Fatal("the notes probe rendered no notes")
	}
	return text
}

// With createNamespaces=false the chart labels nothing, so its notes list
// the Pod Security labels to set on each namespace by hand, as the chart
// sets them on the namespaces it creates; with the default it creates and
// labels them, and the notes say nothing of it.
func TestTargetClusterAccessNotesListPodSecurityLabels(t *testing.T) {
	labels := "label --overwrite namespace %s \\\n" +
		"    pod-security.kubernetes.io/enforce=baseline \\\n" +
		"    pod-security.kubernetes.io/warn=restricted \\\n" +
		"    pod-security.kubernetes.io/audit=restricted"

	notes := renderNotes(t, "--set", "namespaces={team-x,team-y}", "--set", "createNamespaces=false")
	for _, ns := range []string{"team-x", "team-y"} {
		want := "kubectl --context <this-cluster-context> " + strings.ReplaceAll(labels, "%s", ns)
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not contain\n%s\nin\n%s", want, notes)
		}
	}
	for _, want := range []string{"createNamespaces=false", "anvil cluster register refuses a namespace"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, notes)
		}
	}
	// The labels come before the register command they are needed for.
	if strings.Index(notes, "pod-security.kubernetes.io/enforce") > strings.Index(notes, "anvil cluster register --context") {
		t.Errorf("the notes ask for the labels after the register command:\n%s", notes)
	}

	for _, args := range [][]string{
		{"--set", "namespaces={team-x}"},
		{"--set", "namespaces={team-x}", "--set", "privilegedNamespaces={team-x}", "--set", "createNamespaces=true"},
	} {
		if notes := renderNotes(t, args...); strings.Contains(notes, "pod-security.kubernetes.io") {
			t.Errorf("with %v the chart labels the namespaces itself, but the notes ask for labels:\n%s", args, notes)
		}
	}
}
