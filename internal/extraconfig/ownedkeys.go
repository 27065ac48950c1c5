// Package extraconfig knows which options of a node pool's
// configuration spec.extraConfig may set: the allowlist, and the options
// Anvil sets itself. The admission webhook refuses what is off the list or
// owned, and the pool controller refuses it again and reports the owned
// options a pool may still override; both read the same tables here, so
// that what is refused and what is reported cannot drift apart. The
// package is pure: it never talks to a cluster.
package extraconfig

import (
	"fmt"
	"sort"
	"strings"
)

// DefaultSection is the one oslo.config group whose name is case-sensitive.
const DefaultSection = "DEFAULT"

// OwnedKey is one option of the pool's configuration that Anvil manages.
type OwnedKey struct {
	// Section is the oslo.config group in the spelling oslo.config reads
	// it as: DEFAULT in upper case, every other group in lower case.
	Section string
	// Key is the option name.
	Key string
	// Source says where Anvil takes the value from.
	Source string
	// Impact says what an override would break.
	Impact string
}

// Name returns the option as "section.key", the form messages use.
func (k OwnedKey) Name() string { return k.Section + "." + k.Key }

// Reasons shared by several keys, so that related options explain
// themselves the same way.
const (
	sourceContract  = "the Nova's compute contract Secret"
	sourceHostIP    = "the pool, from the node's host IP"
	sourceNativeTLS = "the pool, which migrates over libvirt's native TLS"
	impactNativeTLS = "live migration would leave native TLS and could move guest memory between nodes unencrypted"
	impactPassword  = "a password in the spec is shown to everyone who can read the NovaCompute, and a rotation of the service user's password would no longer reach the pool"
	impactRedirect  = "the service user's password would be sent wherever the override points"
	impactBusTLS    = "the compute would no longer verify the message bus, whose URL carries a password"
)

// clientSections are the sections that authenticate as the service user:
// where they send the password must stay the contract's choice.
var clientSections = []string{"keystone_authtoken", "service_user", "placement", "neutron", "cinder", "glance", "barbican"}

// passwordSections are the client sections whose password the compute
// contract carries.
var passwordSections = []string{"keystone_authtoken", "service_user", "placement", "neutron", "cinder"}

// RejectedKeys are the options spec.extraConfig must not set: overriding
// them breaks the pool in ways the operator cannot repair, or puts a
// credential into the spec. The admission webhook refuses them.
var RejectedKeys = append([]OwnedKey{
	{DefaultSection, "host", "the Kubernetes node name",
		"the compute service would register under a name the pool cannot match to its node, so it would never be drained or deleted"},
	{DefaultSection, "my_ip", sourceHostIP,
		"migrations, consoles and the metadata service would reach another address than the node's"},
	{DefaultSection, "transport_url", sourceContract,
		"the compute would use another message bus than its Nova's conductor and scheduler"},
	{DefaultSection, "state_path", "the pool, which mounts the node's /var/lib/nova",
		"instances and their state would be written outside the node directory and lost with the pod"},
	{"oslo_concurrency", "lock_path", "the pool, which keeps locks under the node's /var/lib/nova",
		"external locks, which nova-compute shares with os-brick, would leave the node directory the pool mounts"},
	{"libvirt", "connection_uri", "the pool, which connects to the node's libvirtd at qemu:///system",
		"nova-compute would not manage the node's hypervisor"},
	{"libvirt", "live_migration_scheme", sourceNativeTLS, impactNativeTLS},
	{"libvirt", "live_migration_with_native_tls", sourceNativeTLS, impactNativeTLS},
	{"libvirt", "live_migration_uri", sourceNativeTLS,
		"it replaces the scheme the pool sets and bypasses the native TLS setup"},
	{"libvirt", "live_migration_tunnelled", sourceNativeTLS,
		"tunnelling cannot be combined with native TLS, and nova-compute refuses to start with both"},
	{"libvirt", "live_migration_inbound_addr", sourceHostIP,
		"other nodes would send migrations to an address that is not this node's"},
	{"os_vif_ovs", "ovsdb_connection", "the pool, which uses the node's Open vSwitch socket",
		"ports would not be plugged into the node's Open vSwitch, and servers would boot without network"},
	{"vnc", "server_proxyclient_address", sourceHostIP,
		"the console proxy would connect to another address than the node's"},
	{"keystone_authtoken", "www_authenticate_uri", sourceContract, impactRedirect},
	{"oslo_messaging_rabbit", "ssl", sourceContract, impactBusTLS},
	{"oslo_messaging_rabbit", "ssl_ca_file", sourceContract, impactBusTLS},
}, append(passwordKeys(), redirectKeys()...)...)

// privsepHelperKey is refused in every privsep section: it names the
// command the root helper runs, so an override runs anything as root on
// every node of the pool.
const privsepHelperKey = "helper_command"

// ReportedKeys are the options spec.libvirt sets that spec.extraConfig may
// still override. The override is honoured, but the pool reports it, since
// the spec then no longer says how the pool runs.
var ReportedKeys = []OwnedKey{
	{"libvirt", "virt_type", "spec.libvirt.virtType", "the override wins over spec.libvirt.virtType"},
	{"libvirt", "cpu_mode", "spec.libvirt.cpuMode", "the override wins over spec.libvirt.cpuMode"},
	{"libvirt", "cpu_models", "spec.libvirt.cpuModels", "the override wins over spec.libvirt.cpuModels"},
	{"libvirt", "images_type", "spec.libvirt.imagesType", "the override wins over spec.libvirt.imagesType"},
}

// redirectKeys are auth_url and endpoint_override of every client section.
func redirectKeys() []OwnedKey {
	keys := make([]OwnedKey, 0, 2*len(clientSections))
	for _, s := range clientSections {
		keys = append(keys, OwnedKey{s, "auth_url", sourceContract, impactRedirect}, OwnedKey{s, "endpoint_override", sourceContract, impactRedirect})
	}
	return keys
}

func passwordKeys() []OwnedKey {
	keys := make([]OwnedKey, 0, len(passwordSections))
	for _, s := range passwordSections {
		keys = append(keys, OwnedKey{s, "password", sourceContract, impactPassword})
	}
	return keys
}

// CanonicalSection returns the group oslo.config reads a section as. It
// lower-cases every group name but DEFAULT, so [LIBVIRT] configures the same
// options as [libvirt], while [default] is a group of its own. Comparing
// canonical names keeps an owned key from slipping through in another case.
func CanonicalSection(section string) string {
	if section == DefaultSection {
		return section
	}
	return strings.ToLower(section)
}

// find returns the entry of table for the option, if there is one.
func find(table []OwnedKey, section, key string) (OwnedKey, bool) {
	section = CanonicalSection(section)
	for _, k := range table {
		if k.Section == section && k.Key == key {
			return k, true
		}
	}
	return OwnedKey{}, false
}

// OwnedKeyError returns the admission message for an option of
// spec.extraConfig that RejectedKeys holds, and false for any other option,
// the reported ones included. Section names are compared the way
// oslo.config reads them (see CanonicalSection); keys exactly.
func OwnedKeyError(section, key string) (msg string, ok bool) {
	k, ok := find(RejectedKeys, section, key)
	if !ok && strings.HasPrefix(CanonicalSection(section), "privsep") && key == privsepHelperKey {
		k, ok = OwnedKey{CanonicalSection(section), key, "oslo.privsep, which starts its own root helper",
			"the override would run any command as root on every node of the pool"}, true
	}
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s is managed via %s and must not be set in extraConfig (%s)", k.Name(), k.Source, k.Impact), true
}

// CheckExtraConfig returns the refusal of the first option extra sets that
// a pool may not set (an owned one, or one off the allowlist), in section
// and key order, or "" when there is none. The pool controller checks again
// what admission checked, since a pool may reach it without the webhook.
func CheckExtraConfig(extra map[string]map[string]string) string {
	sections := make([]string, 0, len(extra))
	for s := range extra {
		sections = append(sections, s)
	}
	sort.Strings(sections)
	for _, s := range sections {
		keys := make([]string, 0, len(extra[s]))
		for k := range extra[s] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if msg := Refusal(s, k); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// OverriddenPoolKeys returns the options of ReportedKeys that extra sets, as
// sorted, distinct "section.key" names in canonical spelling, or nil when it
// sets none. The pool controller reports them; rejected keys are not
// returned, since admission keeps them out of the spec.
func OverriddenPoolKeys(extra map[string]map[string]string) []string {
	seen := map[string]bool{}
	for section, options := range extra {
		for key := range options {
			if k, ok := find(ReportedKeys, section, key); ok {
				seen[k.Name()] = true
			}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
