package neutronmetadataagent

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

const testSB = "ssl:192.0.2.1:30651,ssl:192.0.2.2:30652"

// parseINI reads a rendered file back into section -> key -> value; it
// accepts only the shape the writer produces, and fails on a repeat.
func parseINI(t *testing.T, data []byte) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	current := ""
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			current = line[1 : len(line)-1]
			if _, dup := out[current]; dup {
				t.Fatalf("line %d: section [%s] twice", i+1, current)
			}
			out[current] = map[string]string{}
		default:
			key, value, ok := strings.Cut(line, " = ")
			if !ok || current == "" {
				t.Fatalf("line %d: %q is not a key = value line in a section", i+1, line)
			}
			if _, dup := out[current][key]; dup {
				t.Fatalf("line %d: [%s] %s twice", i+1, current, key)
			}
			out[current][key] = value
		}
	}
	return out
}

func TestRenderAgentINI(t *testing.T) {
	fixed := map[string]map[string]string{
		"agent":                        {"root_helper": "env"},
		"ovs":                          {"ovsdb_connection": "unix:/run/openvswitch/db.sock"},
		"ovn":                          {"ovn_sb_connection": testSB, "ovn_sb_private_key": "/etc/ovn/tls/tls.key", "ovn_sb_certificate": "/etc/ovn/tls/tls.crt", "ovn_sb_ca_cert": "/etc/ovn/tls/ca.crt"},
		"oslo_messaging_notifications": {"driver": "noop"},
		"oslo_concurrency":             {"lock_path": "/var/lib/neutron/lock"},
	}
	tests := []struct {
		name  string
		agent func() *neutronv1alpha1.NeutronMetadataAgent
		want  map[string]string // [DEFAULT], exactly
	}{
		{name: "http, defaults, no host", agent: func() *neutronv1alpha1.NeutronMetadataAgent { return testAgent("a", "") },
			want: map[string]string{"state_path": "/var/lib/neutron", "metadata_workers": "4", "nova_metadata_port": "8775"}},
		{name: "http with a host and workers", agent: func() *neutronv1alpha1.NeutronMetadataAgent {
			a := testAgent("a", "")
			a.Spec.NovaMetadata.Host = "10.0.0.7"
			a.Spec.MetadataWorkers = ptrInt32(2)
			return a
		}, want: map[string]string{"state_path": "/var/lib/neutron", "metadata_workers": "2", "nova_metadata_host": "10.0.0.7", "nova_metadata_port": "8775"}},
		{name: "https with a CA bundle", agent: func() *neutronv1alpha1.NeutronMetadataAgent { return withHTTPS(testAgent("a", "compute-a")) },
			want: map[string]string{"state_path": "/var/lib/neutron", "metadata_workers": "4", "nova_metadata_host": "nova-metadata.example.com",
				"nova_metadata_port": "443", "nova_metadata_protocol": "https", "auth_ca_cert": "/etc/nova-metadata-ca/ca.crt"}},
		{name: "https trusting the image's CAs", agent: func() *neutronv1alpha1.NeutronMetadataAgent {
			a := withHTTPS(testAgent("a", ""))
			a.Spec.NovaMetadata.CABundleSecretRef = nil
			return a
		}, want: map[string]string{"state_path": "/var/lib/neutron", "metadata_workers": "4", "nova_metadata_host": "nova-metadata.example.com",
			"nova_metadata_port": "443", "nova_metadata_protocol": "https"}},
		{name: "a CA bundle without https is not rendered", agent: func() *neutronv1alpha1.NeutronMetadataAgent {
			a := withHTTPS(testAgent("a", ""))
			a.Spec.NovaMetadata.Protocol = ""
			return a
		}, want: map[string]string{"state_path": "/var/lib/neutron", "metadata_workers": "4", "nova_metadata_host": "nova-metadata.example.com",
			"nova_metadata_port": "443"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ini, err := RenderAgentINI(tt.agent(), testSB)
			if err != nil {
				t.Fatal(err)
			}
			got := parseINI(t, ini)
			if len(got) != len(fixed)+1 || !equal(got["DEFAULT"], tt.want) {
				t.Errorf("[DEFAULT] = %v, want %v\n%s", got["DEFAULT"], tt.want, ini)
			}
			for section, want := range fixed {
				if !equal(got[section], want) {
					t.Errorf("[%s] = %v, want %v", section, got[section], want)
				}
			}
			for _, never := range []string{"metadata_proxy_shared_secret", "transport_url", "controlplane-nova-metadata-agent-secret"} {
				if strings.Contains(string(ini), never) {
					t.Errorf("the configuration names %s:\n%s", never, ini)
				}
			}
		})
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Values are literal: a '$' is doubled, so oslo.config reads it back
// instead of expanding it, and a control character is refused naming the
// section only.
func TestRenderAgentINIWritesValuesLiterally(t *testing.T) {
	a := testAgent("a", "")
	a.Spec.NovaMetadata.Host = "meta$data"
	ini, err := RenderAgentINI(a, "ssl:$sb:6642")
	if err != nil {
		t.Fatal(err)
	}
	got := parseINI(t, ini)
	if got["DEFAULT"]["nova_metadata_host"] != "meta$$data" || got["ovn"]["ovn_sb_connection"] != "ssl:$$sb:6642" {
		t.Errorf("'$' not escaped:\n%s", ini)
	}

	a.Spec.NovaMetadata.Host = "evil\n[DEFAULT]\nmetadata_proxy_shared_secret = x"
	_, err = RenderAgentINI(a, testSB)
	if !novaconfig.IsUnsafeValue(err) || strings.Contains(err.Error(), "evil") {
		t.Errorf("err = %v, want an unsafe value error that names no value", err)
	}
}

// The ConfigMap is immutable and named by its content, so a change is a
// new ConfigMap the pods roll onto, and the same content the same name.
func TestBuildConfigMap(t *testing.T) {
	a := testAgent("agent", "")
	ini, err := RenderAgentINI(a, testSB)
	if err != nil {
		t.Fatal(err)
	}
	cm := BuildConfigMap(a, ini)
	if cm.Immutable == nil || !*cm.Immutable || cm.Data[ConfigKey] != string(ini) || len(cm.Data) != 1 {
		t.Errorf("ConfigMap = %+v", cm)
	}
	if !strings.HasPrefix(cm.Name, "agent-config-") || len(cm.Name) != len("agent-config-")+8 {
		t.Errorf("name = %s, want agent-config-<8 hex>", cm.Name)
	}
	a.Spec.MetadataWorkers = ptrInt32(8)
	ini2, _ := RenderAgentINI(a, testSB)
	if BuildConfigMap(a, ini2).Name == cm.Name {
		t.Error("another configuration has the same name")
	}
}

func TestConfigMapsToPrune(t *testing.T) {
	at := func(name string, sec int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+sec), 0))}
	}
	tests := []struct {
		name    string
		current string
		owned   []metav1.ObjectMeta
		want    []string
	}{
		{name: "nothing to prune", current: "c", owned: []metav1.ObjectMeta{at("a", 1), at("b", 2), at("c", 3)}},
		{name: "the oldest goes", current: "d", owned: []metav1.ObjectMeta{at("a", 1), at("b", 2), at("c", 3), at("d", 4)}, want: []string{"a"}},
		{name: "current is kept even when it is the oldest", current: "a",
			owned: []metav1.ObjectMeta{at("a", 1), at("b", 2), at("c", 3), at("d", 4)}, want: []string{"b"}},
		{name: "equal timestamps fall back to the name", current: "x",
			owned: []metav1.ObjectMeta{at("a", 1), at("b", 1), at("c", 1), at("x", 9)}, want: []string{"a"}},
		{name: "current not listed yet", current: "new", owned: []metav1.ObjectMeta{at("a", 1), at("b", 2), at("c", 3)}, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ConfigMapsToPrune(tt.current, tt.owned, 3)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("prune = %v, want %v", got, tt.want)
			}
		})
	}
}
