package neutronmetadataagent

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// ConfigKey is the key of the agent's configuration in its ConfigMap, and
// the file name the agent reads.
const ConfigKey = "neutron_ovn_metadata_agent.ini"

// Paths inside the agent's pods the configuration names. They are the
// mount points of the DaemonSet, so both are built from these constants.
const (
	configDir = "/etc/neutron"
	// ConfigPath is the file the agent is started with.
	ConfigPath = configDir + "/" + ConfigKey
	statePath  = "/var/lib/neutron"
	ovsRunPath = "/run/openvswitch"
	netnsPath  = "/run/netns"
	tlsPath    = "/etc/ovn/tls"
	caDir      = "/etc/nova-metadata-ca"
	// caFile is where the CA bundle is projected, whatever its key in the
	// Secret is.
	caFile = "ca.crt"
	// metadataProxySocket is the unix socket the agent serves haproxy on;
	// it exists once the agent is up, so readiness tests for it.
	metadataProxySocket = statePath + "/metadata_proxy"
)

// keptConfigMaps is how many rendered ConfigMaps the agent keeps: the
// current one and the two before it, so pods that still roll, or a quick
// rollback, find theirs.
const keptConfigMaps = 3

// RenderAgentINI renders neutron_ovn_metadata_agent.ini for an agent that
// reads the Southbound database at sb. Every value is written literally
// by the shared INI writer, '$' escaped, and a control character anywhere
// is refused, naming the section and never the value.
//
// It never holds the shared secret, which reaches the agent as an
// environment variable from its Secret, nor a transport_url: ML2/OVN sends
// the agent no RPC. It is pure.
func RenderAgentINI(agent *neutronv1alpha1.NeutronMetadataAgent, sb string) ([]byte, error) {
	nm := agent.Spec.NovaMetadata
	defaults := []novaconfig.Option{
		{Key: "state_path", Value: statePath},
		{Key: "metadata_workers", Value: strconv.Itoa(int(agent.Spec.ResolvedMetadataWorkers()))},
	}
	if nm.Host != "" {
		// Empty keeps the agent's own default rather than an empty host.
		defaults = append(defaults, novaconfig.Option{Key: "nova_metadata_host", Value: nm.Host})
	}
	defaults = append(defaults, novaconfig.Option{Key: "nova_metadata_port", Value: strconv.Itoa(int(nm.ResolvedPort()))})
	if usesHTTPS(agent) {
		defaults = append(defaults, novaconfig.Option{Key: "nova_metadata_protocol", Value: neutronv1alpha1.ProtocolHTTPS})
	}
	if mountsCA(agent) {
		defaults = append(defaults, novaconfig.Option{Key: "auth_ca_cert", Value: caDir + "/" + caFile})
	}
	file := novaconfig.File{Sections: []novaconfig.Section{
		{Name: "DEFAULT", Options: defaults},
		// The agent runs as root in its container; no sudo or rootwrap.
		{Name: "agent", Options: []novaconfig.Option{{Key: "root_helper", Value: "env"}}},
		{Name: "ovs", Options: []novaconfig.Option{{Key: "ovsdb_connection", Value: "unix:" + ovsRunPath + "/db.sock"}}},
		{Name: "ovn", Options: []novaconfig.Option{
			{Key: "ovn_sb_connection", Value: sb},
			{Key: "ovn_sb_private_key", Value: tlsPath + "/tls.key"},
			{Key: "ovn_sb_certificate", Value: tlsPath + "/tls.crt"},
			{Key: "ovn_sb_ca_cert", Value: tlsPath + "/ca.crt"},
		}},
		{Name: "oslo_messaging_notifications", Options: []novaconfig.Option{{Key: "driver", Value: "noop"}}},
		{Name: "oslo_concurrency", Options: []novaconfig.Option{{Key: "lock_path", Value: statePath + "/lock"}}},
	}}
	return file.Render()
}

// usesHTTPS tells whether the agent reaches the metadata API over TLS.
func usesHTTPS(agent *neutronv1alpha1.NeutronMetadataAgent) bool {
	return agent.Spec.NovaMetadata.ResolvedProtocol() == neutronv1alpha1.ProtocolHTTPS
}

// mountsCA tells whether the agent verifies the metadata API with a CA
// bundle of its own. Admission refuses a bundle without https; the check
// is repeated so that an agent admitted before that rule never mounts a
// bundle it would not use.
func mountsCA(agent *neutronv1alpha1.NeutronMetadataAgent) bool {
	return usesHTTPS(agent) && agent.Spec.NovaMetadata.CABundleSecretRef != nil
}

// ConfigHash is the first 8 hex digits of the SHA-256 of a rendered
// configuration: the suffix of its ConfigMap's name.
func ConfigHash(ini []byte) string {
	sum := sha256.Sum256(ini)
	return hex.EncodeToString(sum[:])[:8]
}

// BuildConfigMap returns the immutable ConfigMap of one rendered
// configuration. Immutable, because the name carries the content's hash:
// the kubelet then need not watch it, and nobody can change what a running
// pod reads under a name that promises otherwise.
func BuildConfigMap(agent *neutronv1alpha1.NeutronMetadataAgent, ini []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: ConfigMapName(agent, ConfigHash(ini)), Namespace: agent.Namespace, Labels: childLabels(agent, configComponent),
		},
		Immutable: ptr.To(true),
		Data:      map[string]string{ConfigKey: string(ini)},
	}
}

// ConfigMapsToPrune returns the names of the rendered ConfigMaps to delete:
// all but the keep newest, where current counts as the newest whatever its
// timestamp says (a ConfigMap rendered again keeps its old creation time).
// Equal timestamps, which have second resolution, are ordered by name so
// the choice is stable. It is pure.
func ConfigMapsToPrune(current string, owned []metav1.ObjectMeta, keep int) []string {
	sorted := make([]metav1.ObjectMeta, 0, len(owned))
	for _, m := range owned {
		if m.Name != current {
			sorted = append(sorted, m)
		}
	}
	sort.Slice(sorted, func(i, j int) bool {
		ti, tj := sorted[i].CreationTimestamp, sorted[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return sorted[i].Name > sorted[j].Name
	})
	var prune []string
	for i, m := range sorted {
		// keep-1: current takes one of the places.
		if i >= keep-1 {
			prune = append(prune, m.Name)
		}
	}
	return prune
}
