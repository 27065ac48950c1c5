package podrunner

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OVNChassisMappings returns the mappings of a chassis's two DaemonSets:
// the OVS pod (init host-prepare, ovsdb-server without OVN_DB,
// ovs-vswitchd) and the ovn-controller pod (init apply-node,
// ovn-controller), and of its identity, evacuate and chassis-del Jobs.
// Every node of the runner has its own /run/openvswitch,
// /run/ovn and /etc/openvswitch under its directory, hostPaths or not, so
// that the chassis of two nodes never meet.
func OVNChassisMappings() ImageMap {
	withoutDB := false
	return append(ImageMap{
		{Name: "ovn-host-prepare", Match: matchContainerName("host-prepare", nil), Build: buildHostPrepare},
		{Name: "ovs-ovsdb-server", Match: matchContainerName(containerOVSDB, &withoutDB), Build: buildOVSDBServer},
		{Name: "ovs-vswitchd", Match: matchContainerName("ovs-vswitchd", nil), Build: buildVswitchd},
		{Name: "ovn-apply-node", Match: matchContainerName("apply-node", nil), Build: buildApplyNode},
		{Name: "ovn-controller", Match: matchContainerName("ovn-controller", nil), Build: buildOVNController},
	}, ovnMaintenanceMappings()...)
}

// chassisPaths are a chassis container's local stand-ins for the host's
// OVS directories.
type chassisPaths struct {
	ovsRun, ovnRun, confDB, dbSock string
}

// chassisPathsOf finds the node's directories for the container.
func chassisPathsOf(c Container) chassisPaths {
	ovsRun := c.hostPath(ovsRunDir)
	return chassisPaths{
		ovsRun: ovsRun,
		ovnRun: c.hostPath(ovnRunDir),
		confDB: c.hostPath(ovsConfDB),
		dbSock: filepath.Join(ovsRun, "db.sock"),
	}
}

// buildHostPrepare stands in for the init container that loads the kernel
// modules and prepares the host. modprobe is skipped, and the container's
// log says so; the run directories are created, and conf.db is created
// from the schema when missing and converted when the schema is newer.
func buildHostPrepare(c Container) (Command, error) {
	p := chassisPathsOf(c)
	db := shellQuote(p.confDB)
	script := []string{
		"set -e",
		shellLine("echo", modprobeSkipped),
		shellLine("mkdir", "-p", p.ovsRun, p.ovnRun, filepath.Dir(p.confDB)),
		"if [ ! -s " + db + " ]; then " + shellLine(OVSDBToolPath, "create", p.confDB, OVSSchema),
		"elif [ \"$(" + shellLine(OVSDBToolPath, "needs-conversion", p.confDB, OVSSchema) + ")\" = yes ]; then " +
			shellLine(OVSDBToolPath, "convert", p.confDB, OVSSchema),
		"fi",
	}
	return Command{Path: shellPath, Args: []string{"-c", strings.Join(script, "\n")}}, nil
}

// buildOVSDBServer runs the chassis's OVS database on the node's
// /run/openvswitch/db.sock, as ovs-ctl would, with its pidfile and control
// socket there too so that ovs-appctl finds them.
func buildOVSDBServer(c Container) (Command, error) {
	p := chassisPathsOf(c)
	return Command{
		Path: OVSDBServerPath,
		Args: []string{
			p.confDB,
			"--remote=punix:" + p.dbSock,
			"--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
			"--pidfile=" + filepath.Join(p.ovsRun, "ovsdb-server.pid"),
			"--log-file=" + filepath.Join(c.WorkDir, "ovsdb-server.log"),
		},
		Dirs: []string{p.ovsRun},
		Env:  withDBDir(ovsRunEnv(p.ovsRun, p.ovnRun, c.WorkDir), filepath.Dir(p.confDB)),
	}, nil
}

// buildVswitchd runs ovs-vswitchd with the dummy datapath: this kernel has
// no openvswitch module, and the dummy datapath needs no privilege yet
// lets ovn-controller program its flows, so that Neutron sees the chassis
// alive and binds ports to it. No packet reaches the host.
//
// On a node with a network namespace of its own it runs inside it with
// the userspace datapath instead (apply-node asks for netdev bridges),
// whose ports are real devices of that namespace that carry packets, as
// the metadata agent's veths and a test instance's need. Without
// --disable-system it would also probe the kernel datapath this kernel
// lacks.
func buildVswitchd(c Container) (Command, error) {
	p := chassisPathsOf(c)
	args := []string{"unix:" + p.dbSock, "--enable-dummy=override", "--disable-system", "--disable-system-route"}
	if c.NetNS != "" {
		args = []string{"unix:" + p.dbSock, "--disable-system"}
	}
	cmd := Command{
		Path: OVSVswitchdPath,
		Args: append(args,
			// The default name, so that ovs-appctl -t ovs-vswitchd finds it.
			"--pidfile="+filepath.Join(p.ovsRun, "ovs-vswitchd.pid"),
			"--log-file="+filepath.Join(c.WorkDir, "ovs-vswitchd.log"),
		),
		Dirs: []string{p.ovsRun},
		Env:  ovsRunEnv(p.ovsRun, p.ovnRun, c.WorkDir),
	}
	return inNodeNetNS(c, cmd), nil
}

// inNodeNetNS runs cmd inside the node's network namespace when the node
// has one. nsenter changes the network namespace only and execs the
// program, which keeps its pid and process group; `ip netns exec` would
// also give it a mount namespace of its own, which hides the namespaces
// the metadata agent mounts under /run/netns from everyone else.
func inNodeNetNS(c Container, cmd Command) Command {
	if c.NetNS == "" {
		return cmd
	}
	cmd.Args = append([]string{"--net=" + netnsPath(c.NetNS), cmd.Path}, cmd.Args...)
	cmd.Path = NsenterPath
	return cmd
}

// tcpAddresses returns the host:port of the ssl: and tcp: entries of an
// OVN connection list, the ones a relay must carry into a namespace.
func tcpAddresses(list string) []string {
	var out []string
	for _, entry := range strings.Split(list, ",") {
		proto, rest, _ := strings.Cut(strings.TrimSpace(entry), ":")
		if proto == "ssl" || proto == "tcp" {
			out = append(out, rest)
		}
	}
	return out
}

// buildOVNController runs ovn-controller against the node's OVS database
// with the client TLS files. ovn-controller 23.03 has no --unixctl: its
// control socket is ovn-controller.<pid>.ctl in OVN_RUNDIR, which is the
// node's /run/ovn, where ovn-appctl -t ovn-controller finds it. OVS_RUNDIR
// tells it where ovs-vswitchd keeps br-int.mgmt. On a node with a network
// namespace of its own it runs there, beside ovs-vswitchd, and the
// Southbound addresses of its OVN_REMOTE are relayed into it; apply-node
// wrote the same translated list into the database it reads.
func buildOVNController(c Container) (Command, error) {
	p := chassisPathsOf(c)
	key, cert, ca, err := tlsFiles(c)
	if err != nil {
		return Command{}, err
	}
	// The node's identity appears once its identity Job ran; until then
	// the build fails and the runner tries again, as the image's script
	// waits for the files.
	for _, f := range []string{key, cert, ca} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			return Command{}, fmt.Errorf("no chassis identity installed on node %s yet: %s is missing", c.NodeName, filepath.Base(f))
		}
	}
	var relays []string
	if remote := c.Env["OVN_REMOTE"]; remote != "" && c.NetNS != "" {
		translated, err := c.translate(remote)
		if err != nil {
			return Command{}, fmt.Errorf("OVN_REMOTE: %w", err)
		}
		relays = tcpAddresses(translated)
	}
	return inNodeNetNS(c, Command{
		Path: OVNControllerPath,
		Args: []string{
			"unix:" + p.dbSock,
			"--private-key=" + key, "--certificate=" + cert, "--ca-cert=" + ca,
			"--pidfile=" + filepath.Join(p.ovnRun, "ovn-controller.pid"),
			"--log-file=" + filepath.Join(c.WorkDir, "ovn-controller.log"),
		},
		Dirs:   []string{p.ovnRun},
		Env:    ovsRunEnv(p.ovsRun, p.ovnRun, c.WorkDir),
		Relays: relays,
	}), nil
}

// buildApplyNode writes the node's entry of the chassis's nodes ConfigMap,
// mounted at /etc/ovn/nodes, into the OVS database's external_ids in one
// ovs-vsctl transaction, which also creates the Open_vSwitch row on a fresh
// database and the mapped bridges. A missing entry fails the build, so the
// runner waits for it as it waits for a missing Secret.
//
// Two values differ from a real node's. ovn-encap-ip is NodeEncapAddress
// rather than NODE_IP, 127.0.0.1 on every runner node, because the
// southbound database refuses two chassis with the same encapsulation type
// and IP. ovn-bridge-datapath-type is dummy, or netdev on a node with a
// network namespace of its own, where ovs-vswitchd runs the userspace
// datapath; the relays then carry ovn-remote's addresses into that
// namespace for ovn-controller. ovn-remote is OVN_REMOTE with
// its member names and cluster IPs translated. LEAVING is not read: the
// chassis-del Job removes a departing chassis.
func buildApplyNode(c Container) (Command, error) {
	node := cmp.Or(c.Env["NODE_NAME"], c.NodeName)
	entry, err := readNodeEntry(c, node)
	if err != nil {
		return Command{}, err
	}
	remote, err := c.translate(c.Env["OVN_REMOTE"])
	if err != nil {
		return Command{}, fmt.Errorf("OVN_REMOTE: %w", err)
	}
	probe, err := envInt(c, "OVN_REMOTE_PROBE_INTERVAL_MS", 60000)
	if err != nil {
		return Command{}, err
	}
	if entry["SYSTEM_ID"] == "" {
		return Command{}, fmt.Errorf("the entry of node %s has no SYSTEM_ID", node)
	}
	p := chassisPathsOf(c)
	ids := [][2]string{
		{"system-id", entry["SYSTEM_ID"]},
		{"hostname", node},
		{"ovn-remote", remote},
		{"ovn-encap-type", cmp.Or(entry["ENCAP_TYPE"], "geneve")},
		{"ovn-encap-ip", NodeEncapAddress(node)},
		{"ovn-remote-probe-interval", fmt.Sprint(probe)},
		{"ovn-bridge-datapath-type", datapathType(c)},
	}
	var removed []string
	if m := entry["BRIDGE_MAPPINGS"]; m != "" {
		ids = append(ids, [2]string{"ovn-bridge-mappings", m})
	} else {
		removed = append(removed, "ovn-bridge-mappings")
	}
	if entry["GATEWAY"] == "true" {
		ids = append(ids, [2]string{"ovn-cms-options", "enable-chassis-as-gw"})
	} else {
		removed = append(removed, "ovn-cms-options")
	}
	args := []string{"--db=unix:" + p.dbSock, "--no-wait", "--timeout=30", "--", "init", "--", "set", "Open_vSwitch", "."}
	for _, kv := range ids {
		args = append(args, "external_ids:"+kv[0]+"="+ovsdbString(kv[1]))
	}
	for _, k := range removed {
		args = append(args, "--", "remove", "Open_vSwitch", ".", "external_ids", k)
	}
	for _, bridge := range mappedBridges(entry["BRIDGE_MAPPINGS"]) {
		args = append(args, "--", "--may-exist", "add-br", bridge)
	}
	cmd := Command{Path: OVSVsctlPath, Args: args, Env: ovsRunEnv(p.ovsRun, p.ovnRun, c.WorkDir)}
	if c.NetNS != "" {
		cmd.Relays = tcpAddresses(remote)
	}
	return cmd, nil
}

// datapathType is the datapath of the node's bridges: netdev where
// ovs-vswitchd runs in the node's own namespace, else dummy.
func datapathType(c Container) string {
	if c.NetNS != "" {
		return "netdev"
	}
	return "dummy"
}

// readNodeEntry reads a node's KEY=value entry from the nodes ConfigMap.
func readNodeEntry(c Container, node string) (map[string]string, error) {
	file, ok := c.Mounts.Path(ovnNodesDir + "/" + node)
	if !ok {
		return nil, fmt.Errorf("no volume is mounted at %s", ovnNodesDir)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("the entry of node %s: %w", node, err)
	}
	return parseNodeEntry(data), nil
}

// parseNodeEntry reads the bash KEY=value lines the chassis controller
// renders: comments and blank lines are skipped, "export " is allowed,
// and one pair of quotes around a value is removed.
func parseNodeEntry(data []byte) map[string]string {
	out := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || !isAssignment(k+"=") {
			continue
		}
		out[k] = unquote(strings.TrimSpace(v))
	}
	return out
}

// mappedBridges returns the bridges of "physnet:bridge,..." in order.
func mappedBridges(mappings string) []string {
	var out []string
	for _, m := range strings.Split(mappings, ",") {
		if _, bridge, ok := strings.Cut(strings.TrimSpace(m), ":"); ok && bridge != "" {
			out = append(out, bridge)
		}
	}
	return out
}
