package novacompute

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/extraconfig"
	"github.com/anvil/anvil/internal/novaconfig"
)

// Paths inside the nova-compute container. The contract's mount path is part
// of the contract: its ssl_ca_file points there.
const (
	computeConfigMountPath = "/etc/nova/compute-config"
	poolConfigMountPath    = "/etc/nova/compute-pool.conf.d"
	novaStatePath          = "/var/lib/nova"
	ovsRunPath             = "/run/openvswitch"
	ovsdbSocket            = ovsRunPath + "/db.sock"
)

// keptPoolConfigs is how many older configuration ConfigMaps a pool keeps
// beside the current one, so pods of the previous revision can still start.
const keptPoolConfigs = 3

// BuildPoolConfig renders compute-pool.conf: the options that make the
// pool's nodes hypervisors of this deployment, then spec.extraConfig over
// them, section by section, with the user's values winning. It is pure.
func BuildPoolConfig(pool *novav1alpha1.NovaCompute) ([]byte, error) {
	// Admission refuses these already; a pool that bypassed it must not
	// have them rendered either.
	if msg := extraconfig.CheckExtraConfig(pool.Spec.ExtraConfig); msg != "" {
		return nil, &OwnedKeyError{Message: msg}
	}
	lv := pool.Spec.Libvirt
	virtType := lv.VirtType
	if virtType == "" {
		virtType = "kvm"
	}
	libvirt := []novaconfig.Option{{Key: "virt_type", Value: virtType}, {Key: "connection_uri", Value: "qemu:///system"}}
	if lv.CPUMode != "" {
		libvirt = append(libvirt, novaconfig.Option{Key: "cpu_mode", Value: lv.CPUMode})
	}
	if len(lv.CPUModels) > 0 {
		libvirt = append(libvirt, novaconfig.Option{Key: "cpu_models", Value: strings.Join(lv.CPUModels, ",")})
	}
	if lv.ImagesType != "" {
		libvirt = append(libvirt, novaconfig.Option{Key: "images_type", Value: lv.ImagesType})
	}
	// Live migration always runs over libvirt's TLS listener: the nodes of
	// a compute cluster sit on networks the pool does not control.
	libvirt = append(libvirt,
		novaconfig.Option{Key: "live_migration_scheme", Value: "tls"},
		novaconfig.Option{Key: "live_migration_with_native_tls", Value: "true"})

	sections := []novaconfig.Section{
		{Name: "DEFAULT", Options: []novaconfig.Option{
			{Key: "compute_driver", Value: "libvirt.LibvirtDriver"},
			{Key: "state_path", Value: novaStatePath},
		}},
		{Name: "libvirt", Options: libvirt},
		{Name: "os_vif_ovs", Options: []novaconfig.Option{{Key: "ovsdb_connection", Value: "unix:" + ovsdbSocket}}},
		{Name: "oslo_concurrency", Options: []novaconfig.Option{{Key: "lock_path", Value: novaStatePath + "/tmp"}}},
		// $my_ip, never 0.0.0.0: the pods use the host network and the
		// consoles have no password.
		{Name: "vnc", Options: []novaconfig.Option{{Key: "server_listen", Value: "$my_ip"}}},
	}
	// Only Anvil's own "$my_ip" is expanded; a value the user puts there
	// instead is written literally.
	return novaconfig.File{Sections: mergeExtra(sections, pool.Spec.ExtraConfig), Interpolated: map[string]string{"vnc/server_listen": "$my_ip"}}.Render()
}

// mergeExtra lays extraConfig over the rendered sections: a rendered key
// takes the user's value in place, new keys follow in name order, and new
// sections follow in name order, so equal input renders equal bytes.
func mergeExtra(sections []novaconfig.Section, extra map[string]map[string]string) []novaconfig.Section {
	index := map[string]int{}
	for i, s := range sections {
		index[s.Name] = i
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		i, ok := index[name]
		if !ok {
			sections = append(sections, novaconfig.Section{Name: name})
			i = len(sections) - 1
			index[name] = i
		}
		keys := make([]string, 0, len(extra[name]))
		for k := range extra[name] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			replaced := false
			for j := range sections[i].Options {
				if sections[i].Options[j].Key == k {
					sections[i].Options[j].Value = extra[name][k]
					replaced = true
				}
			}
			if !replaced {
				sections[i].Options = append(sections[i].Options, novaconfig.Option{Key: k, Value: extra[name][k]})
			}
		}
	}
	return sections
}

// PoolConfigName is the name of the immutable ConfigMap for rendered bytes:
// {pool}-config-<first 10 hex digits of their SHA-256>.
func PoolConfigName(pool string, rendered []byte) string {
	sum := sha256.Sum256(rendered)
	return pool + "-config-" + hex.EncodeToString(sum[:])[:10]
}

// ContractHash is the hash a pool puts into its pod template: any change of
// the contract's data changes it, and equal data never does.
func ContractHash(data map[string][]byte) string { return novaconfig.Hash(data) }

// requiredContractKeys are the contract keys a pool cannot run without.
var requiredContractKeys = []string{"nova-compute.conf", "transport_url", "password"}

// MissingContractKeys lists the required keys that are absent or empty.
func MissingContractKeys(data map[string][]byte) []string {
	var missing []string
	for _, k := range requiredContractKeys {
		if len(data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	return missing
}

// OwnedKeyError refuses an extraConfig option a pool may not set: one
// Anvil manages, or one off the allowlist. Its message
// names the option, never its value.
type OwnedKeyError struct{ Message string }

func (e *OwnedKeyError) Error() string { return e.Message }
