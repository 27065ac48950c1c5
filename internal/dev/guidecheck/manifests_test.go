package guidecheck

import (
	"slices"
	"strings"
	"testing"
)

// seedText has what the seed guide holds: a command's here-document, a
// fragment standing alone under a comment, and prose that looks a little
// like YAML.
const seedText = `Apply the chassis:

kubectl apply -f - <<EOF
kind: OVNChassis
metadata:
  name: c
EOF
kubectl wait ovnchassis/c \
  --for=condition=Ready

port: 443 assumes a Gateway on the standard port.
Steps:

# A fragment of a release.
spec:
  values:
    # a comment inside
    a: 1
  list:
    - x
After it, prose.
`

func TestBlocks(t *testing.T) {
	want := []string{
		"kind: OVNChassis\nmetadata:\n  name: c",
		"# A fragment of a release.\nspec:\n  values:\n    # a comment inside\n    a: 1\n  list:\n    - x",
	}
	if got := Blocks(seedText); !slices.Equal(got, want) {
		t.Errorf("Blocks =\n%q\nwant\n%q", got, want)
	}
}

func TestAppliedBlocks(t *testing.T) {
	tests := []struct {
		name, script string
		want         []string
	}{
		{name: "an apply with its output sent away",
			script: "kubectl apply -f - <<EOF >/dev/null\nkind: A\nEOF\n", want: []string{"kind: A"}},
		{name: "an apply on another context, quoted delimiter",
			script: "  kubectl --context x apply -f - >/dev/null <<'YAML'\nkind: B\n  YAML\n", want: []string{"kind: B"}},
		{name: "a refusal and a dry run apply nothing",
			script: "refuses \"x\" 'f' kubectl apply -f - <<EOF\nkind: C\nEOF\nkubectl apply --dry-run=server -f - <<EOF\nkind: D\nEOF\n"},
		{name: "another command's here-document and a here-string",
			script: "cat <<EOF\nkind: E\nEOF\ngrep -q x <<<\"$y\"\nkubectl apply -f - <<EOF\nkind: F\nEOF\n", want: []string{"kind: F"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AppliedBlocks(tt.script); !slices.Equal(got, tt.want) {
				t.Errorf("AppliedBlocks = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDocuments(t *testing.T) {
	got := Documents([]string{"kind: A\n---\n\nkind: B\n", "---\n", "kind: C"})
	if want := []string{"kind: A", "kind: B", "kind: C"}; !slices.Equal(got, want) {
		t.Errorf("Documents = %q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, doc, label string
		wantErr          bool
	}{
		{name: "kind and name", doc: "kind: NovaCompute\nmetadata:\n  name: pool-a\n", label: "NovaCompute pool-a"},
		{name: "a fragment is its first line", doc: "\n# A fragment.\nspec: {}\n", label: "# A fragment."},
		{name: "a kind without a name", doc: "kind: X\nspec: {}\n", label: "kind: X"},
		{name: "not YAML", doc: "a: [b\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]string{tt.doc})
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Parse = %v, want an error", got)
				}
				return
			}
			if err != nil || len(got) != 1 || got[0].Label != tt.label {
				t.Errorf("Parse = %+v, %v; want the label %q", got, err, tt.label)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name           string
		guide, applied string
		want           []string
	}{
		{name: "equal, comments and key order aside",
			guide: "a: 1 # one\nb: {c: x}\n", applied: "b:\n  c: x\na: 1\n"},
		{name: "a changed number",
			guide: "spec: {port: 443}", applied: "spec: {port: 8443}",
			want: []string{`spec.port: the guide has 443, the scripts 8443`}},
		{name: "a label key with dots and a slash, and a missing field",
			guide: "sel: {\"a.io/b\": \"true\"}", applied: "sel: {\"a.io/c\": \"true\"}",
			want: []string{`sel["a.io/b"]: the guide has "true", the scripts nothing`, `sel["a.io/c"]: the guide has nothing, the scripts "true"`}},
		{name: "lists compare element by element",
			guide: "l: [a, b]", applied: "l: [a, c]", want: []string{`l[1]: the guide has "b", the scripts "c"`}},
		{name: "a list of another length differs whole",
			guide: "l: [a]", applied: "l: [a, b]", want: []string{`l: the guide has ["a"], the scripts ["a","b"]`}},
		{name: "a placeholder matches one word",
			guide: "host: nova.<your domain>", applied: "host: nova.example.org"},
		{name: "a placeholder matches no words with a space",
			guide: "host: nova.<your domain>", applied: "host: nova.a b",
			want: []string{`host: the guide has "nova.\u003cyour domain\u003e", the scripts "nova.a b"`}},
		{name: "a string is no number", guide: "v: \"2026.1\"", applied: "v: 2026.1",
			want: []string{`v: the guide has "2026.1", the scripts 2026.1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Parse([]string{tt.guide, tt.applied})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range Diff("", ms[0].Object, ms[1].Object) {
				got = append(got, d.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestCompareManifests(t *testing.T) {
	parse := func(docs ...string) []Manifest {
		ms, err := Parse(docs)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	agent := "kind: Agent\nmetadata: {name: a}\nspec: {port: 443, secret: s}\n"
	guide := parse(agent, "# A fragment.\nspec: {}\n")
	tests := []struct {
		name    string
		applied []Manifest
		exempt  []string
		want    []string
	}{
		{name: "nothing applied",
			want: []string{"Agent a: no script applies it", "# A fragment.: no script applies it"}},
		{name: "applied as written, the fragment exempt",
			applied: parse(agent), exempt: []string{"# A fragment"}},
		{name: "another name is another manifest",
			applied: parse(strings.Replace(agent, "name: a", "name: b", 1)), exempt: []string{"# A"},
			want: []string{"Agent a: no script applies it"}},
		{name: "the closest of two is reported",
			applied: parse(strings.Replace(agent, "443, secret: s", "1, secret: t", 1), strings.Replace(agent, "443", "8443", 1)),
			exempt:  []string{"# A"},
			want:    []string{"Agent a spec.port: the guide has 443, the scripts 8443"}},
		{name: "an exempt field, and a field the exemption does not name",
			applied: parse(strings.Replace(agent, "443, secret: s", "8443, secret: t", 1)),
			exempt:  []string{"# A", "Agent a spec.port"},
			want:    []string{`Agent a spec.secret: the guide has "s", the scripts "t"`}},
		{name: "a whole manifest exempt by its label",
			applied: nil, exempt: []string{"Agent a", "# A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CompareManifests(guide, tt.applied, tt.exempt); !slices.Equal(got, tt.want) {
				t.Errorf("CompareManifests =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
