package podrunner

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Programs and schemas of Debian's openvswitch-common, openvswitch-switch,
// ovn-central and ovn-host that the OVN mappings run.
const (
	// OVSDBServerPath serves the OVN databases and a chassis's OVS database.
	OVSDBServerPath = "/usr/sbin/ovsdb-server"
	// OVSDBToolPath creates, joins and converts database files.
	OVSDBToolPath = "/usr/bin/ovsdb-tool"
	// OVSVswitchdPath is the switch daemon, run with the dummy datapath.
	OVSVswitchdPath = "/usr/sbin/ovs-vswitchd"
	// OVSVsctlPath writes a chassis's external_ids.
	OVSVsctlPath = "/usr/bin/ovs-vsctl"
	// OVNNorthdPath translates the northbound database into the southbound.
	OVNNorthdPath = "/usr/bin/ovn-northd"
	// OVNControllerPath is a chassis's OVN agent.
	OVNControllerPath = "/usr/bin/ovn-controller"
	// OVNNorthboundSchema and OVNSouthboundSchema are the OVN schemas.
	OVNNorthboundSchema = "/usr/share/ovn/ovn-nb.ovsschema"
	// OVNSouthboundSchema is the southbound schema.
	OVNSouthboundSchema = "/usr/share/ovn/ovn-sb.ovsschema"
	// OVSSchema is the schema of a chassis's conf.db.
	OVSSchema = "/usr/share/openvswitch/vswitch.ovsschema"
	// LocalConfigSchema is OVS's schema for the connections of one server
	// of a clustered database, which its members do not share.
	LocalConfigSchema = "/usr/share/openvswitch/local-config.ovsschema"
)

// Paths of the contract (docs/design/ovn.md) inside the containers.
const (
	ovnTLSDir       = "/etc/ovn/tls"
	ovnIdentityDir  = "/etc/ovn/identity"
	ovnDBDir        = "/var/lib/ovn"
	ovnNodesDir     = "/etc/ovn/nodes"
	ovsRunDir       = "/run/openvswitch"
	ovnRunDir       = "/run/ovn"
	ovsConfDB       = "/etc/openvswitch/conf.db"
	shellPath       = "/bin/sh"
	envOVNDB        = "OVN_DB"
	clusterDomain   = "svc.cluster.local"
	containerOVSDB  = "ovsdb-server"
	modprobeSkipped = `anvil-podrunner: not running "modprobe openvswitch geneve": this kernel has no openvswitch module, and ovs-vswitchd runs with the dummy datapath, which needs none`
)

// OVNMappings returns the mappings that run the pods of an OVNCentral and
// an OVNChassis as this host's Debian OVS and OVN programs, reading the
// contract of docs/design/ovn.md (container names, env and mounts) rather
// than running the images' scripts:
//
//   - a central database member, container ovsdb-server with OVN_DB, as a
//     Raft member on a loopback address of its own (OVNCentralMemberMapping);
//   - ovn-northd (OVNNorthdMapping);
//   - a chassis's host-prepare, ovsdb-server, ovs-vswitchd with the dummy
//     datapath, apply-node and ovn-controller (OVNChassisMappings).
//
// They are not part of DefaultImageMap; put them in front of it to run OVN
// (anvil-podrunner does with --run-ovn).
func OVNMappings() ImageMap {
	return append(ImageMap{OVNCentralMemberMapping(), OVNNorthdMapping()}, OVNChassisMappings()...)
}

// matchContainerName matches containers by name; with ovnDB set, only
// those whose env defines OVN_DB, without it only those whose env does
// not. The contract tells the central's ovsdb-server from the chassis's by
// that variable alone.
func matchContainerName(name string, ovnDB *bool) func(*corev1.Container) bool {
	return func(c *corev1.Container) bool {
		if c.Name != name {
			return false
		}
		if ovnDB == nil {
			return true
		}
		has := false
		for _, e := range c.Env {
			has = has || e.Name == envOVNDB
		}
		return has == *ovnDB
	}
}

// mountedDir returns the local directory of a mount the contract requires.
func mountedDir(c Container, p string) (string, error) {
	local, ok := c.Mounts.Path(p)
	if !ok {
		return "", fmt.Errorf("no volume is mounted at %s", p)
	}
	return local, nil
}

// tlsFiles returns the private key, certificate and CA of the TLS Secret
// mounted at /etc/ovn/tls. Only the paths reach the command line.
func tlsFiles(c Container) (key, cert, ca string, err error) {
	dir, err := mountedDir(c, ovnTLSDir)
	if err != nil {
		return "", "", "", err
	}
	return filepath.Join(dir, "tls.key"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "ca.crt"), nil
}

// envInt reads an optional integer variable of the container; def applies
// when it is unset or empty.
func envInt(c Container, name string, def int) (int, error) {
	v := strings.TrimSpace(c.Env[name])
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a non-negative integer", name, v)
	}
	return n, nil
}

// translate applies the container's address translation to an OVN
// connection list.
func (c Container) translate(list string) (string, error) {
	return translateOVNAddresses(list, c.resolve)
}

// ovsRunEnv is the environment that keeps an OVS or OVN program's default
// files (control sockets, logs) out of /run and /var/log, which belong to
// this host's own OVS, if any.
func ovsRunEnv(ovsRun, ovnRun, logDir string) map[string]string {
	return map[string]string{
		"OVS_RUNDIR": ovsRun, "OVN_RUNDIR": ovnRun,
		"OVS_LOGDIR": logDir, "OVN_LOGDIR": logDir,
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellLine joins a command's words, each quoted.
func shellLine(words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

// ovsdbString quotes s as an OVSDB string atom, which ovs-vsctl needs for
// values with commas or colons, such as a list of remotes.
func ovsdbString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}
