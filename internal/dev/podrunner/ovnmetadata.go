package podrunner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NeutronOVNMetadataAgentPath is Debian's OVN metadata agent, from
// neutron-common.
const NeutronOVNMetadataAgentPath = "/usr/bin/neutron-ovn-metadata-agent"

// The contract of the agent's pods (docs/design/neutron-metadata-agent.md)
// and the agent's own defaults the overrides start from.
const (
	metadataAgentProgram    = "neutron-ovn-metadata-agent"
	containerMetadataAgent  = "metadata-agent"
	containerWaitForChassis = "wait-for-chassis"
	envSBConnection         = "OVN_SB_CONNECTION"
	metadataProxySocketName = "metadata_proxy"
	defaultNovaMetadataHost = "127.0.0.1"
	defaultNovaMetadataPort = 8775
)

// agentHostPrograms are what the agent runs besides itself and the
// chassis's tools: haproxy in each network's namespace, and iptables-save,
// without which it dies at its first provisioning. Neither is a dependency
// of Debian's neutron-common. A variable so that tests can pretend either
// way.
var agentHostPrograms = []string{"/usr/sbin/haproxy", "/usr/sbin/iptables-save"}

// OVNMetadataAgentMappings returns the mappings of a NeutronMetadataAgent's
// pods: the init wait-for-chassis, as a loop of ovs-vsctl and ovn-sbctl,
// and the agent, as Debian's neutron-ovn-metadata-agent run as root in the
// node's network namespace.
//
// The agent needs that namespace (Node.NetNS): it makes a namespace per
// network with a veth into br-int and an haproxy behind it, which only a
// userspace datapath connects, and on the host's own network it would put
// those veths into the host's. On a node without one its build fails, and
// the pod waits, saying why. The mappings are not part of OVNMappings for
// that reason; put them in front with nodes that have a namespace.
func OVNMetadataAgentMappings() ImageMap {
	return ImageMap{
		{Name: "ovn-wait-for-chassis", Match: matchAgentWaitForChassis, Build: buildWaitForChassis},
		{Name: metadataAgentProgram, Match: matchMetadataAgent, Build: buildMetadataAgent},
	}
}

// matchAgentWaitForChassis matches the agent's init container: its name
// and the Southbound address it is given. A NovaCompute pool's init
// container has the same name but waits on the node's OVS database alone,
// and keeps its own mapping.
func matchAgentWaitForChassis(c *corev1.Container) bool {
	if c.Name != containerWaitForChassis {
		return false
	}
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == envSBConnection })
}

// matchMetadataAgent matches a container that runs the agent: its command
// line does, or it is the contract's container and keeps the image's
// entry point.
func matchMetadataAgent(c *corev1.Container) bool {
	if _, ok := invocation(append(append([]string(nil), c.Command...), c.Args...), metadataAgentProgram); ok {
		return true
	}
	return c.Name == containerMetadataAgent && len(c.Command) == 0 && len(c.Args) == 0
}

// buildWaitForChassis stands in for the init container that holds the
// agent until the node's chassis is in the Southbound database: it reads
// the system-id from the node's OVS database and looks for that
// Chassis_Private row with the mounted client identity, every 2 seconds,
// as the image's script does. It runs on the host's network; the
// Southbound address is translated like every OVN address.
func buildWaitForChassis(c Container) (Command, error) {
	raw := strings.TrimSpace(c.Env[envSBConnection])
	if raw == "" {
		return Command{}, fmt.Errorf("%s is empty: the operator resolved no Southbound address", envSBConnection)
	}
	sb, err := c.translate(raw)
	if err != nil {
		return Command{}, fmt.Errorf("%s: %w", envSBConnection, err)
	}
	key, cert, ca, err := tlsFiles(c)
	if err != nil {
		return Command{}, err
	}
	p := chassisPathsOf(c)
	script := strings.Join([]string{
		"while :; do",
		"  id=$(" + shellLine(OVSVsctlPath, "--db=unix:"+p.dbSock, "--timeout=5", "--if-exists", "get", "Open_vSwitch", ".", "external_ids:system-id") + ` 2>/dev/null | tr -d '"')`,
		`  if [ -n "$id" ]; then`,
		"    row=$(" + shellLine(OVNSbctlPath, "--db="+sb, "--no-leader-only", "--timeout=5",
			"--private-key="+key, "--certificate="+cert, "--ca-cert="+ca, "--bare", "--columns=name", "find", "Chassis_Private") +
			` "name=\"$id\"" 2>/dev/null)`,
		`    if [ "$row" = "$id" ]; then echo "chassis $id is registered in the Southbound database"; exit 0; fi`,
		"  fi",
		"  sleep 2",
		"done",
	}, "\n")
	return Command{Path: shellPath, Args: []string{"-c", script}, Env: ovsRunEnv(p.ovsRun, p.ovnRun, c.WorkDir)}, nil
}

// buildMetadataAgent runs neutron-ovn-metadata-agent with the container's
// configuration files, translated into local paths, and a generated file
// passed last that points the agent at this node (see agentOverrides).
// It runs as the runner's user, root, which privsep requires, inside the
// node's network namespace. The shared secret reaches it only through the
// environment the runner gives every container, from its Secret: neither
// the arguments nor any file the runner writes hold it.
//
// Before each start it removes what an earlier run of the agent on the
// node left: its namespaces, their haproxy, and their ports in br-int. The
// userspace datapath keeps reading a veth that was deleted and made again
// under the same name, so a restarted agent that reused the port would
// reach nothing; started clean, it makes every port anew.
func buildMetadataAgent(c Container) (Command, error) {
	if c.NetNS == "" {
		return Command{}, fmt.Errorf("node %s has no network namespace of its own, which the OVN metadata agent needs (podrunner.Node.NetNS)", c.NodeName)
	}
	for _, p := range agentHostPrograms {
		// Said before the start, rather than in a traceback at the first
		// port the agent provisions.
		if _, err := os.Stat(p); err != nil {
			return Command{}, fmt.Errorf("the agent needs %s, which is not installed (make deps installs it)", p)
		}
	}
	args, _ := invocation(ExpandArgs(c.Spec, c.Env), metadataAgentProgram)
	files, rest, err := agentConfigFiles(c, args)
	if err != nil {
		return Command{}, err
	}
	var opts []iniOption
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			// A path of our own making; the content is never quoted.
			return Command{}, fmt.Errorf("reading %s: %w", filepath.Base(f), err)
		}
		opts = append(opts, iniOptions(data)...)
	}
	ov, err := agentOverrides(c, opts)
	if err != nil {
		return Command{}, err
	}
	overridesPath := filepath.Join(c.WorkDir, OverridesFile)
	var cmdArgs []string
	for _, f := range append(files, overridesPath) {
		cmdArgs = append(cmdArgs, "--config-file", f)
	}
	dbSock := chassisPathsOf(c).dbSock
	netns := c.NetNS
	return inNodeNetNS(c, Command{
		Path:   NeutronOVNMetadataAgentPath,
		Args:   append(cmdArgs, rest...),
		Files:  map[string][]byte{overridesPath: renderOverrides(ov.sections)},
		Dirs:   ov.dirs,
		Relays: ov.relays,
		BeforeStart: func(ctx context.Context) error {
			return clearAgentLeftovers(ctx, netns, dbSock)
		},
	}), nil
}

// agentConfigFiles returns the local paths of the configuration files the
// agent's command line names, and its other arguments with mount paths
// translated. A file outside every mount is the image's own, which this
// host does not have, and is left out; the contract names only the
// mounted ini.
func agentConfigFiles(c Container, args []string) (files, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		name, value, inline := strings.Cut(args[i], "=")
		if name != "--config-file" {
			rest = append(rest, c.Mounts.Translate(args[i]))
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return nil, nil, errors.New("--config-file needs a value")
			}
			i++
			value = args[i]
		}
		if local, ok := c.Mounts.Path(value); ok && !slices.Contains(files, local) {
			files = append(files, local)
		}
	}
	if len(files) == 0 {
		return nil, nil, errors.New("the command line names no --config-file inside a mounted volume")
	}
	return files, rest, nil
}

// agentOverride is what the generated file says, and what it implies.
type agentOverride struct {
	sections map[string][][2]string
	relays   []string
	dirs     []string
}

// agentOverrides decides the generated options from the options of the
// container's files (later files win):
//   - every value that is a path inside a mount, translated (the TLS
//     files, auth_ca_cert, lock_path);
//   - host, the node's name, as a real node's host name would be;
//   - state_path, the mounted state directory, or the work directory's;
//   - metadata_proxy_socket, in the node namespace's short directory:
//     a unix socket path has at most 107 bytes, and the state directory's
//     is longer; haproxy connects to whatever the option says;
//   - [ovs] ovsdb_connection, the node's OVS database socket;
//   - [ovn] ovn_sb_connection, translated like every OVN address;
//   - nova_metadata_host and _port, a cluster IP translated.
//
// The TCP addresses of the last two are relayed into the node's namespace.
// metadata_proxy_shared_secret is never read or written.
func agentOverrides(c Container, opts []iniOption) (agentOverride, error) {
	ov := agentOverride{sections: map[string][][2]string{}}
	set := func(section, key, value string) { ov.sections[section] = setKey(ov.sections[section], key, value) }
	values := map[[2]string]string{}
	for _, o := range opts {
		values[[2]string{o.section, o.key}] = o.value
		if local, ok := c.Mounts.Path(o.value); ok {
			set(o.section, o.key, local)
		}
	}
	state := filepath.Join(c.WorkDir, "state")
	if local, ok := c.Mounts.Path(values[[2]string{"DEFAULT", "state_path"}]); ok {
		state = local
	}
	socketDir := filepath.Join(shortRunDir(c.NetNS), shortHash(c.WorkDir))
	set("DEFAULT", "host", c.NodeName)
	set("DEFAULT", "state_path", state)
	set("DEFAULT", "metadata_proxy_socket", filepath.Join(socketDir, metadataProxySocketName))
	ov.dirs = []string{state, socketDir}

	ovsdb := "unix:" + chassisPathsOf(c).dbSock
	if v := values[[2]string{"ovs", "ovsdb_connection"}]; v != "" {
		if p, ok := strings.CutPrefix(v, "unix:"); ok {
			ovsdb = "unix:" + c.hostPath(p)
		} else {
			ovsdb = v
			ov.relays = append(ov.relays, tcpAddresses(v)...)
		}
	}
	set("ovs", "ovsdb_connection", ovsdb)

	raw := values[[2]string{"ovn", "ovn_sb_connection"}]
	if raw == "" {
		return agentOverride{}, errors.New("the configuration sets no [ovn] ovn_sb_connection")
	}
	sb, err := c.translate(raw)
	if err != nil {
		return agentOverride{}, fmt.Errorf("[ovn] ovn_sb_connection: %w", err)
	}
	set("ovn", "ovn_sb_connection", sb)
	ov.relays = append(ov.relays, tcpAddresses(sb)...)

	host, port, err := novaMetadataAddress(c, values)
	if err != nil {
		return agentOverride{}, err
	}
	set("DEFAULT", "nova_metadata_host", host)
	set("DEFAULT", "nova_metadata_port", strconv.Itoa(port))
	ov.relays = append(ov.relays, net.JoinHostPort(host, strconv.Itoa(port)))
	return ov, nil
}

// novaMetadataAddress is where the agent reaches Nova's metadata API: the
// configured host and port, or the agent's defaults, with a Service's
// cluster IP translated to its pod.
func novaMetadataAddress(c Container, values map[[2]string]string) (string, int, error) {
	host := values[[2]string{"DEFAULT", "nova_metadata_host"}]
	if host == "" {
		host = defaultNovaMetadataHost
	}
	port := defaultNovaMetadataPort
	if v := values[[2]string{"DEFAULT", "nova_metadata_port"}]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, fmt.Errorf("nova_metadata_port %q is not a port", v)
		}
		port = n
	}
	host, port, err := c.resolve(host, port)
	if err != nil {
		return "", 0, fmt.Errorf("nova_metadata_host: %w", err)
	}
	return host, port, nil
}

// shortHash is 8 hex digits of a hash of s, for short unique names.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// renderOverrides writes the generated file: [DEFAULT] first, then the
// other sections by name, each option in the order it was set.
func renderOverrides(sections map[string][][2]string) []byte {
	var buf bytes.Buffer
	buf.WriteString("# Generated by anvil-podrunner: the options that make this container run on a\n# local host. Passed last, so they win over every other file.\n")
	names := slices.Sorted(maps.Keys(sections))
	if i := slices.Index(names, "DEFAULT"); i > 0 {
		names = append([]string{"DEFAULT"}, slices.Delete(names, i, i+1)...)
	}
	for _, name := range names {
		fmt.Fprintf(&buf, "\n[%s]\n", name)
		for _, kv := range sections[name] {
			fmt.Fprintf(&buf, "%s = %s\n", kv[0], kv[1])
		}
	}
	return buf.Bytes()
}
