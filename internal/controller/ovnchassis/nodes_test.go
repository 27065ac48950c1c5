package ovnchassis

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// Fixed system-ids of the form newSystemID mints.
const (
	idLive    = "1a2b3c4d-1111-4111-8111-11111111abcd"
	idStatus  = "22222222-2222-4222-8222-222222222222"
	idGone    = "33333333-3333-4333-8333-333333333333"
	idMinted  = "44444444-4444-4444-8444-444444444444"
	idForeign = "55555555-5555-4555-8555-555555555555"
)

func TestNodeEntryRender(t *testing.T) {
	e := NodeEntry{Name: "hv1", SystemID: idLive, Gateway: true, BridgeMappings: "physnet1:br-ex", EncapType: "geneve"}
	got := e.Render()
	want := "SYSTEM_ID='" + idLive + "'\nGATEWAY=true\nBRIDGE_MAPPINGS='physnet1:br-ex'\nENCAP_TYPE='geneve'\n"
	if got != want {
		t.Errorf("render = %q", got)
	}
	if ParseSystemID(got) != idLive {
		t.Errorf("system-id read back = %q", ParseSystemID(got))
	}
	e.Leaving = true
	if !strings.HasSuffix(e.Render(), "LEAVING=true\n") || e.Hash() == (NodeEntry{Name: "hv1", SystemID: idLive}).Hash() {
		t.Errorf("leaving entry = %q", e.Render())
	}
	if len(e.Hash()) != 8 {
		t.Errorf("hash = %q", e.Hash())
	}
}

// TestRenderedValuesStayData sources rendered entries in bash: whatever a
// value holds, bash reads it back as it was and runs nothing.
func TestRenderedValuesStayData(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	marker := filepath.Join(t.TempDir(), "ran")
	for _, v := range []string{"$(touch " + marker + ")", "`touch " + marker + "`", "a'b", "'; touch " + marker + "; '", `"$HOME"\`, "x\ny"} {
		e := NodeEntry{SystemID: v, BridgeMappings: v, EncapType: v}
		cmd := exec.Command(bash, "-c", `source /dev/stdin; printf '%s\0%s\0%s' "$SYSTEM_ID" "$BRIDGE_MAPPINGS" "$ENCAP_TYPE"`)
		cmd.Stdin = strings.NewReader(e.Render())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sourcing the entry for %q: %v", v, err)
		}
		if want := v + "\x00" + v + "\x00" + v; string(out) != want {
			t.Errorf("bash read %q back as %q", v, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("sourcing the entry for %q ran a command", v)
		}
	}
}

func TestParseSystemID(t *testing.T) {
	for _, tc := range []struct {
		name, rendered, want string
	}{
		{"single quotes", "SYSTEM_ID='" + idLive + "'\n", idLive},
		{"double quotes of earlier versions", "GATEWAY=false\nSYSTEM_ID=\"" + idLive + "\"\n", idLive},
		{"not a UUID", "SYSTEM_ID='ovn-central-0'\n", ""},
		{"a command", "SYSTEM_ID=\"$(reboot)\"\n", ""},
		{"upper case", "SYSTEM_ID='" + strings.ToUpper(idLive) + "'\n", ""},
		{"trailing text", "SYSTEM_ID='" + idLive + "' x\n", ""},
		{"absent", "GATEWAY=true\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseSystemID(tc.rendered); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecideNodes(t *testing.T) {
	c := testChassis("compute-a")
	c.Spec.Gateway = &ovnv1alpha1.ChassisGatewaySpec{NodeSelector: map[string]string{GatewayNodeLabel: "true"}}
	c.Spec.BridgeMappings = []ovnv1alpha1.BridgeMapping{{PhysicalNetwork: "physnet1", Bridge: "br-ex"}}
	c.Status.Nodes = []ovnv1alpha1.ChassisNodeStatus{{Name: "hv2", SystemID: idStatus}, {Name: "gone", SystemID: idGone}}
	live := map[string]string{
		// hv1 was written and its pass stopped before status: kept.
		"hv1": NodeEntry{SystemID: idLive}.Render(),
		// A live entry never overrides status.
		"hv2": NodeEntry{SystemID: idForeign}.Render(),
		// A key nobody selected or recorded names no leaving chassis.
		"planted": NodeEntry{SystemID: idForeign}.Render(),
		// A selected node whose live id is not Anvil's gets a new one.
		"hv3": NodeEntry{SystemID: "$(reboot)"}.Render(),
	}
	minted := 0
	mint := func() string { minted++; return idMinted }
	selected := []NodeInput{
		{Name: "hv3", Labels: map[string]string{}},
		{Name: "hv1", Labels: map[string]string{GatewayNodeLabel: "true"}},
		{Name: "hv2"},
	}
	got := DecideNodes(c, selected, live, mint)
	want := []NodeEntry{
		{Name: "gone", SystemID: idGone, EncapType: "geneve", Leaving: true},
		{Name: "hv1", SystemID: idLive, Gateway: true, BridgeMappings: "physnet1:br-ex", EncapType: "geneve"},
		{Name: "hv2", SystemID: idStatus, BridgeMappings: "physnet1:br-ex", EncapType: "geneve"},
		{Name: "hv3", SystemID: idMinted, BridgeMappings: "physnet1:br-ex", EncapType: "geneve"},
	}
	if len(got) != len(want) {
		t.Fatalf("entries = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if minted != 1 {
		t.Errorf("minted %d system-ids, want 1", minted)
	}
}

// issued is e with an issued identity.
func issued(e NodeEntry, hash string) NodeEntry {
	e.IdentityHash = hash
	return e
}

// withIdentity is a status entry that installed the identity hash.
func withIdentity(n ovnv1alpha1.ChassisNodeStatus, hash string) ovnv1alpha1.ChassisNodeStatus {
	n.IdentityHash = hash
	return n
}

func TestDecideMaintenance(t *testing.T) {
	entry := func(name string, gw, leaving bool) NodeEntry {
		return NodeEntry{Name: name, SystemID: name + "-id", Gateway: gw, EncapType: "geneve", Leaving: leaving}
	}
	recorded := func(e NodeEntry, hash string, gw, evacuated bool) ovnv1alpha1.ChassisNodeStatus {
		return ovnv1alpha1.ChassisNodeStatus{Name: e.Name, SystemID: e.SystemID, ConfigHash: hash, Gateway: gw, GatewayEvacuated: evacuated}
	}
	a, b, cNode, d := entry("a", false, false), entry("b", false, false), entry("c", false, true), entry("d", true, false)
	tests := []struct {
		name     string
		entries  []NodeEntry
		recorded []ovnv1alpha1.ChassisNodeStatus
		want     []string
	}{
		{"new nodes need nothing", []NodeEntry{a, b}, nil, nil},
		{"unchanged nodes need nothing", []NodeEntry{a}, []ovnv1alpha1.ChassisNodeStatus{recorded(a, a.Hash(), false, false)}, nil},
		{"a changed entry is applied", []NodeEntry{a}, []ovnv1alpha1.ChassisNodeStatus{recorded(a, "00000000", false, false)}, []string{"apply a"}},
		{"a demoted gateway is applied first", []NodeEntry{a}, []ovnv1alpha1.ChassisNodeStatus{recorded(entry("a", true, false), entry("a", true, false).Hash(), true, false)}, []string{"apply a"}},
		{"then evacuated", []NodeEntry{a}, []ovnv1alpha1.ChassisNodeStatus{recorded(a, a.Hash(), true, false)}, []string{"evacuate a"}},
		{"once", []NodeEntry{a}, []ovnv1alpha1.ChassisNodeStatus{recorded(a, a.Hash(), false, true)}, nil},
		{"a leaving node is deleted", []NodeEntry{cNode}, []ovnv1alpha1.ChassisNodeStatus{recorded(cNode, "11111111", false, false)}, []string{"chassis-del c"}},
		{"a promoted gateway is applied", []NodeEntry{d}, []ovnv1alpha1.ChassisNodeStatus{recorded(entry("d", false, false), entry("d", false, false).Hash(), false, true)}, []string{"apply d"}},
		{"a new node's issued identity is installed", []NodeEntry{issued(a, "aaaa0001")}, nil, []string{"identity a"}},
		{"an identity not issued yet is waited for", []NodeEntry{a}, nil, nil},
		{"an installed identity needs nothing", []NodeEntry{issued(a, "aaaa0001")}, []ovnv1alpha1.ChassisNodeStatus{withIdentity(recorded(a, a.Hash(), false, false), "aaaa0001")}, nil},
		{"a renewed identity is installed before a change is applied", []NodeEntry{issued(a, "aaaa0002")}, []ovnv1alpha1.ChassisNodeStatus{withIdentity(recorded(a, "00000000", false, false), "aaaa0001")}, []string{"identity a"}},
		{"a leaving node is deleted, not given its identity", []NodeEntry{issued(cNode, "cccc0001")}, []ovnv1alpha1.ChassisNodeStatus{recorded(cNode, "11111111", false, false)}, []string{"chassis-del c"}},
	}
	for _, tt := range tests {
		var got []string
		for _, act := range DecideMaintenance(tt.entries, tt.recorded) {
			got = append(got, act.Kind+" "+act.Entry.Name)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRecordNodes(t *testing.T) {
	a := NodeEntry{Name: "a", SystemID: "a-id", EncapType: "geneve"}
	gone := NodeEntry{Name: "gone", SystemID: "g-id", Leaving: true}
	prev := []ovnv1alpha1.ChassisNodeStatus{
		{Name: "a", SystemID: "a-id", ConfigHash: "00000000", Gateway: true},
		{Name: "gone", SystemID: "g-id", ConfigHash: "11111111"},
	}
	got := RecordNodes([]NodeEntry{a, gone}, prev, map[string]string{"a": ApplyJob})
	if len(got) != 2 || got[0].ConfigHash != a.Hash() || !got[0].Gateway || !got[1].Leaving {
		t.Fatalf("after apply: %+v", got)
	}
	got = RecordNodes([]NodeEntry{a, gone}, got, map[string]string{"a": EvacuateJob, "gone": ChassisDelJob})
	if len(got) != 1 || got[0].Gateway || !got[0].GatewayEvacuated {
		t.Fatalf("after evacuation and deletion: %+v", got)
	}
	got = RecordNodes([]NodeEntry{issued(a, "aaaa0001")}, got, map[string]string{"a": IdentityJob})
	if len(got) != 1 || got[0].IdentityHash != "aaaa0001" || !got[0].GatewayEvacuated {
		t.Fatalf("after the identity Job: %+v", got)
	}
	fresh := RecordNodes([]NodeEntry{{Name: "new", SystemID: "n", Gateway: true}}, nil, nil)
	if len(fresh) != 1 || fresh[0].ConfigHash == "" || !fresh[0].Gateway {
		t.Errorf("a new node = %+v", fresh)
	}
}

// The central's key never reaches a compute cluster: the published copy
// holds its CA alone.
func TestBuildClientSecretPublishesOnlyTheCA(t *testing.T) {
	src := &corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "ca.crt": []byte("a"), "extra": []byte("x")}}
	s := BuildClientSecret(testChassis("compute-a"), src)
	if len(s.Data) != 1 || string(s.Data["ca.crt"]) != "a" || s.Labels[componentLabel] != ClientSecretComponent || s.Name != "controlplane-compute-chassis-ovn-client" {
		t.Errorf("copy = %s %v %v", s.Name, s.Labels, s.Data)
	}
	if MissingClientKey(&corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("c")}}) != "tls.key" {
		t.Error("missing key not found in order")
	}
}

func TestJobNameFits(t *testing.T) {
	c := testChassis("")
	c.Name = strings.Repeat("c", ovnv1alpha1.MaxOVNChassisNameLength)
	if n := len(JobName(c, ChassisDelJob, strings.Repeat("n", 253))); n > 63 {
		t.Errorf("Job name has %d characters", n)
	}
}
