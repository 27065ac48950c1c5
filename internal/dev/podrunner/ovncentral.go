package podrunner

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// ovnDatabase is what differs between the northbound and the southbound
// database of a central.
type ovnDatabase struct {
	name       string // the schema's database name
	schema     string
	file       string // the file in the member's claim
	clientPort int
	raftPort   int
}

// ovnDatabases are the two databases by OVN_DB, with the contract's ports.
var ovnDatabases = map[string]ovnDatabase{
	"nb": {name: "OVN_Northbound", schema: OVNNorthboundSchema, file: "ovnnb_db.db", clientPort: 6641, raftPort: 6643},
	"sb": {name: "OVN_Southbound", schema: OVNSouthboundSchema, file: "ovnsb_db.db", clientPort: 6642, raftPort: 6644},
}

// OVNCentralMemberMapping runs a central database member, the contract's
// container ovsdb-server with OVN_DB in its env, as this host's
// ovsdb-server serving a clustered database. Its pod gets a loopback
// address of its own (OwnAddress), on which it listens for clients at
// OVN_DB_PORT and for Raft at OVN_RAFT_PORT, so that the members of one
// database, which all use the same ports, can share this host.
//
// The database lives in the claim mounted at /var/lib/ovn. On an empty
// claim, member 0 creates the cluster with OVN_ELECTION_TIMER_MS and every
// other member joins it through member 0, whose DNS name the runner
// translates to its address; a claim that holds a database starts from
// it. TLS comes from the files mounted at /etc/ovn/tls. Client connections
// are configured in a Local_Config database of the member's own, which
// takes OVN_INACTIVITY_PROBE_MS, since the clustered database's Connection
// table is shared by all members and would make each one bind every
// member's address. As in the image's script, the Southbound's client port
// carries the ovn-controller role and OVN_DB_INTERNAL_PORT, when set, is a
// second listener without one. The pidfile, control socket (ovsdb-server.ctl), log
// and a local unix socket (ovsdb-server.sock) are in the container's work
// directory.
func OVNCentralMemberMapping() Mapping {
	withDB := true
	return Mapping{
		Name:       "ovn-central-member",
		Match:      matchContainerName(containerOVSDB, &withDB),
		Build:      buildCentralMember,
		OwnAddress: true,
	}
}

// centralMember is a member's settings, read from its env.
type centralMember struct {
	db            ovnDatabase
	index         int
	peerService   string
	namespace     string
	electionTimer int
	probe         int
	// internalPort is OVN_DB_INTERNAL_PORT, 0 when unset.
	internalPort int
}

// readCentralMember reads and checks the contract's variables.
func readCentralMember(c Container) (centralMember, error) {
	db, ok := ovnDatabases[c.Env[envOVNDB]]
	if !ok {
		return centralMember{}, fmt.Errorf("%s=%q is neither nb nor sb", envOVNDB, c.Env[envOVNDB])
	}
	m := centralMember{db: db, peerService: c.Env["OVN_PEER_SERVICE"], namespace: c.Env["POD_NAMESPACE"]}
	podName := c.Env["POD_NAME"]
	if c.Pod != nil {
		podName = cmp.Or(podName, c.Pod.Name)
		m.namespace = cmp.Or(m.namespace, c.Pod.Namespace)
	}
	if m.peerService == "" {
		return centralMember{}, fmt.Errorf("OVN_PEER_SERVICE is not set")
	}
	// Member i is the StatefulSet's pod i: the peer Service's name, a dash
	// and the ordinal.
	ordinal, found := strings.CutPrefix(podName, m.peerService+"-")
	index, err := strconv.Atoi(ordinal)
	if !found || err != nil || index < 0 {
		return centralMember{}, fmt.Errorf("pod %q is not a member of %s", podName, m.peerService)
	}
	m.index = index
	for _, v := range []struct {
		name string
		def  int
		to   *int
	}{
		{"OVN_DB_PORT", db.clientPort, &m.db.clientPort},
		{"OVN_RAFT_PORT", db.raftPort, &m.db.raftPort},
		{"OVN_ELECTION_TIMER_MS", 0, &m.electionTimer},
		{"OVN_DB_INTERNAL_PORT", 0, &m.internalPort},
		// -1 leaves ovsdb-server's own probe interval.
		{"OVN_INACTIVITY_PROBE_MS", -1, &m.probe},
	} {
		if *v.to, err = envInt(c, v.name, v.def); err != nil {
			return centralMember{}, err
		}
	}
	return m, nil
}

// buildCentralMember builds a member's command: a short shell script that
// creates or joins the database when the claim holds none, writes the
// member's Local_Config, and execs ovsdb-server, so that the server is the
// container's process and a restart finds the database it left.
func buildCentralMember(c Container) (Command, error) {
	m, err := readCentralMember(c)
	if err != nil {
		return Command{}, err
	}
	dataDir, err := mountedDir(c, ovnDBDir)
	if err != nil {
		return Command{}, err
	}
	key, cert, ca, err := tlsFiles(c)
	if err != nil {
		return Command{}, err
	}
	own := c.PodIP
	if own == "" {
		own = HostIP
	}
	raftAddr := func(host string) string { return "ssl:" + joinHostPort(host, m.db.raftPort) }
	dbFile := filepath.Join(dataDir, m.db.file)
	var create []string
	if m.index == 0 {
		create = []string{OVSDBToolPath}
		if m.electionTimer > 0 {
			create = append(create, "--election-timer="+strconv.Itoa(m.electionTimer))
		}
		create = append(create, "create-cluster", dbFile, m.db.schema, raftAddr(own))
	} else {
		first := fmt.Sprintf("%s-0.%s.%s.%s", m.peerService, m.peerService, m.namespace, clusterDomain)
		host, port, err := c.resolve(first, m.db.raftPort)
		if err != nil {
			return Command{}, fmt.Errorf("member 0: %w", err)
		}
		create = []string{OVSDBToolPath, "join-cluster", dbFile, m.db.name, raftAddr(own), "ssl:" + joinHostPort(host, port)}
	}
	local := filepath.Join(c.WorkDir, "local_config.db")
	connections := m.connections(own)
	server := []string{
		"exec", OVSDBServerPath, dbFile, local,
		"--pidfile=" + filepath.Join(c.WorkDir, "ovsdb-server.pid"),
		"--unixctl=" + filepath.Join(c.WorkDir, "ovsdb-server.ctl"),
		"--log-file=" + filepath.Join(c.WorkDir, "ovsdb-server.log"),
		"--remote=punix:" + filepath.Join(c.WorkDir, "ovsdb-server.sock"),
		"--remote=db:Local_Config,Config,connections",
		"--private-key=" + key, "--certificate=" + cert, "--ca-cert=" + ca,
	}
	script := []string{
		"set -e",
		"if [ ! -s " + shellQuote(dbFile) + " ]; then " + shellLine(create...) + "; fi",
		shellLine("rm", "-f", local),
		shellLine(OVSDBToolPath, "create", local, LocalConfigSchema),
		shellLine(OVSDBToolPath, "transact", local, localConfigTransaction(connections)) + " >/dev/null",
		shellLine(server...),
	}
	return Command{
		Path: shellPath,
		Args: []string{"-c", strings.Join(script, "\n")},
		Dirs: []string{dataDir},
		Env:  withDBDir(ovsRunEnv(c.WorkDir, c.WorkDir, c.WorkDir), dataDir),
	}, nil
}

// connections are the member's client listeners on its own address, as
// the image's script configures them: the client port, which on the
// Southbound carries OVN's ovn-controller role, and on the Southbound the
// internal port without a role (OVN_DB_INTERNAL_PORT).
func (m centralMember) connections(own string) []map[string]any {
	client := map[string]any{"target": "pssl:" + strconv.Itoa(m.db.clientPort) + ":" + own}
	if m.db.name == ovnDatabases["sb"].name {
		client["role"] = "ovn-controller"
	}
	out := []map[string]any{client}
	if m.internalPort > 0 {
		out = append(out, map[string]any{"target": "pssl:" + strconv.Itoa(m.internalPort) + ":" + own})
	}
	if m.probe >= 0 {
		for _, c := range out {
			c["inactivity_probe"] = m.probe
		}
	}
	return out
}

// localConfigTransaction inserts the member's client connections into a
// fresh Local_Config database.
func localConfigTransaction(connections []map[string]any) string {
	refs := make([]any, 0, len(connections))
	ops := []any{"Local_Config"}
	for i, c := range connections {
		name := "c" + strconv.Itoa(i)
		refs = append(refs, []any{"named-uuid", name})
		ops = append(ops, map[string]any{"op": "insert", "table": "Connection", "uuid-name": name, "row": c})
	}
	config := map[string]any{"op": "insert", "table": "Config", "row": map[string]any{"connections": []any{"set", refs}}}
	ops = append(ops[:1], append([]any{config}, ops[1:]...)...)
	data, _ := json.Marshal(ops)
	return string(data)
}

// OVNNorthdMapping runs the contract's ovn-northd container as this host's
// ovn-northd: OVN_NB_DB and OVN_SB_DB translated to the members' local
// addresses, client TLS from /etc/ovn/tls, OVN_NORTHD_THREADS threads,
// and its pidfile, control socket (ovn-northd.ctl) and log in the
// container's work directory. Replicas on one host hold the southbound
// lock in turn, as on a cluster.
func OVNNorthdMapping() Mapping {
	return Mapping{
		Name:  "ovn-northd",
		Match: matchContainerName("ovn-northd", nil),
		Build: func(c Container) (Command, error) {
			nb, err := c.translate(c.Env["OVN_NB_DB"])
			if err != nil {
				return Command{}, fmt.Errorf("OVN_NB_DB: %w", err)
			}
			sb, err := c.translate(c.Env["OVN_SB_DB"])
			if err != nil {
				return Command{}, fmt.Errorf("OVN_SB_DB: %w", err)
			}
			key, cert, ca, err := tlsFiles(c)
			if err != nil {
				return Command{}, err
			}
			threads, err := envInt(c, "OVN_NORTHD_THREADS", 0)
			if err != nil {
				return Command{}, err
			}
			args := []string{
				"--ovnnb-db=" + nb, "--ovnsb-db=" + sb,
				"--private-key=" + key, "--certificate=" + cert, "--ca-cert=" + ca,
				"--pidfile=" + filepath.Join(c.WorkDir, "ovn-northd.pid"),
				"--unixctl=" + filepath.Join(c.WorkDir, "ovn-northd.ctl"),
				"--log-file=" + filepath.Join(c.WorkDir, "ovn-northd.log"),
			}
			if threads > 0 {
				args = append(args, "--n-threads="+strconv.Itoa(threads))
			}
			return Command{Path: OVNNorthdPath, Args: args, Env: ovsRunEnv(c.WorkDir, c.WorkDir, c.WorkDir)}, nil
		},
	}
}

// joinHostPort formats host and port as OVN writes them, with brackets
// around an IPv6 address.
func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// withDBDir adds the database directory to an OVS environment.
func withDBDir(env map[string]string, dir string) map[string]string {
	env["OVS_DBDIR"], env["OVN_DBDIR"] = dir, dir
	return env
}
