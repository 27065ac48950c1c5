package guidecheck

import (
	"slices"
	"testing"
)

const guide = `Intro text. It mentions kubectl get pods in prose, which is no command.

kubectl patch controlplane cp -n openstack --type merge \
  -p '{"spec":{}}'
host=<node>
zone="$(kubectl get node "${host}" \
  -o jsonpath='{.metadata.labels.zone}')"
kubectl apply -f - <<EOF
kind: NovaCompute
openstack server create x
EOF
openstack compute service set --enable <node> nova-compute
kubectl patch novacompute a --type=merge -p '{"spec":{
  "traits":["X"]}}'
KIND_HOST_PORT=8443 make deploy-infra
A sentence. with=equals is prose.
jq . <<<"$keys"
chainsaw test --test-dir tests/e2e/nova/compute-node-pool
`

func TestExtract(t *testing.T) {
	want := []string{
		`kubectl patch controlplane cp -n openstack --type merge -p '{"spec":{}}'`,
		`host=<node>`,
		`zone="$(kubectl get node "${host}" -o jsonpath='{.metadata.labels.zone}')"`,
		`kubectl apply -f - <<EOF`,
		`openstack compute service set --enable <node> nova-compute`,
		`kubectl patch novacompute a --type=merge -p '{"spec":{ "traits":["X"]}}'`,
		`KIND_HOST_PORT=8443 make deploy-infra`,
		// A here-string opens no here-document: the next line is a command.
		`jq . <<<"$keys"`,
		`chainsaw test --test-dir tests/e2e/nova/compute-node-pool`,
	}
	if got := Extract(guide); !slices.Equal(got, want) {
		t.Errorf("Extract =\n%q\nwant\n%q", got, want)
	}
}

func TestMissing(t *testing.T) {
	cmds := Extract(guide)
	tests := []struct {
		name    string
		scripts []string
		exempt  []string
		want    []string
	}{
		{name: "nothing run", want: cmds},
		{name: "wrapped differently, placeholders filled, some exempt",
			scripts: []string{
				"kubectl patch controlplane cp -n openstack \\\n    --type merge -p '{\"spec\":{}}' >/dev/null\nhost=compute-a-node-1\n",
				"zone=\"$(kubectl get node \"${host}\" -o jsonpath='{.metadata.labels.zone}')\"\nkubectl apply -f - <<EOF\n",
				"openstack compute service set --enable \"$host\" nova-compute\n",
			},
			exempt: []string{"KIND_HOST_PORT=8443", "kubectl patch novacompute", "jq", "chainsaw test"}},
		{name: "a placeholder matches one word only",
			scripts: []string{"openstack compute service set --enable a b nova-compute"},
			want:    cmds},
		{name: "a changed argument is not the command",
			scripts: []string{"kubectl patch controlplane cp -n other --type merge -p '{\"spec\":{}}'"},
			exempt:  []string{"host=", "zone=", "kubectl apply", "openstack", "KIND", "kubectl patch novacompute", "jq", "chainsaw"},
			want:    []string{cmds[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Missing(cmds, tt.scripts, tt.exempt); !slices.Equal(got, tt.want) {
				t.Errorf("Missing =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestExemptions(t *testing.T) {
	md := "# Guide\n\n## Commands the devstack does not run\n\n| Command | Why |\n| --- | --- |\n" +
		"| `KIND_HOST_PORT=8443` | the devstack is `make devstack` |\n| `openstack volume` | |\n| `a \\| b` | piped |\n\n## Next\n\n| `kubectl` | elsewhere |\n"
	want := []string{"KIND_HOST_PORT=8443", "a | b"}
	if got := Exemptions(md, "Commands the devstack does not run"); !slices.Equal(got, want) {
		t.Errorf("Exemptions = %q, want %q", got, want)
	}
}

func TestUnrecognized(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{name: "known commands and sentences", text: "kubectl get pods\nhvo reads two labels.\nThen apply it:\nport: 443 assumes a Gateway\n  indented continuation\n"},
		{name: "a tool the check does not know",
			text: "flux reconcile helmrelease hvo\nskopeo copy docker://a docker://b\nvaluesFrom reads only Secrets.\n",
			want: []string{"skopeo copy docker://a docker://b"}},
		{name: "a table row separated by a tab", text: "cell_name\tcell1, the cell\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unrecognized(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Unrecognized = %q, want %q", got, tt.want)
			}
		})
	}
}
