package podrunner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// memberContainer is the contract's central member container.
func memberContainer(db string) corev1.Container {
	env := []corev1.EnvVar{
		{Name: "OVN_DB", Value: db}, {Name: "OVN_PEER_SERVICE", Value: "c-" + db},
		{Name: "OVN_REPLICAS", Value: "3"}, {Name: "POD_NAME"}, {Name: "POD_NAMESPACE"},
	}
	return corev1.Container{Name: "ovsdb-server", Command: []string{"/bin/bash", "/scripts/ovsdb-server.sh"}, Env: env}
}

// ovnFixture is what the runner hands a mapping for a container of pod.
func ovnFixture(t *testing.T, pod string, spec corev1.Container, env map[string]string) Container {
	t.Helper()
	root := t.TempDir()
	return Container{
		Pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "openstack"}},
		Spec:     &spec,
		NodeName: "node-1",
		WorkDir:  filepath.Join(root, "work"),
		HostRoot: filepath.Join(root, "host"),
		PodIP:    OwnPodAddress("openstack", pod),
		Env:      env,
		Mounts: Mounts{
			{MountPath: "/var/lib/ovn", HostPath: filepath.Join(root, "claim"), Kind: VolumeClaim},
			{MountPath: "/etc/ovn/tls", HostPath: filepath.Join(root, "tls"), Kind: VolumeSecret, Files: []string{"ca.crt", "tls.crt", "tls.key"}},
			{MountPath: "/etc/ovn/nodes", HostPath: filepath.Join(root, "nodes"), Kind: VolumeConfigMap},
		},
		// The fake translation marks what it translated.
		Resolve: func(host string, port int) (string, int, error) {
			if ns, p, ok := memberPod(host); ok {
				return OwnPodAddress(ns, p), port, nil
			}
			if host == "10.96.0.9" {
				return "127.30.0.1", 16642, nil
			}
			return host, port, nil
		},
	}
}

func TestOVNMappingsLookup(t *testing.T) {
	m := OVNMappings()
	tests := []struct {
		spec corev1.Container
		want string
	}{
		{memberContainer("nb"), "ovn-central-member"},
		{corev1.Container{Name: "ovsdb-server"}, "ovs-ovsdb-server"},
		{corev1.Container{Name: "ovn-northd"}, "ovn-northd"},
		{corev1.Container{Name: "host-prepare"}, "ovn-host-prepare"},
		{corev1.Container{Name: "ovs-vswitchd"}, "ovs-vswitchd"},
		{corev1.Container{Name: "apply-node"}, "ovn-apply-node"},
		{corev1.Container{Name: "ovn-controller"}, "ovn-controller"},
		{corev1.Container{Name: "nova-compute"}, ""},
	}
	for _, tt := range tests {
		got, _ := m.Lookup(&tt.spec)
		if got.Name != tt.want {
			t.Errorf("%s: mapping %q, want %q", tt.spec.Name, got.Name, tt.want)
		}
		if got.OwnAddress != (tt.want == "ovn-central-member") {
			t.Errorf("%s: OwnAddress = %v", tt.spec.Name, got.OwnAddress)
		}
	}
}

// TestCentralMemberCommands checks the script of member 0, which creates
// the cluster, and of member 1, which joins through member 0's address.
func TestCentralMemberCommands(t *testing.T) {
	env := func(pod string) map[string]string {
		return map[string]string{
			"OVN_DB": "nb", "OVN_DB_PORT": "6641", "OVN_RAFT_PORT": "6643", "OVN_PEER_SERVICE": "c-nb",
			"OVN_REPLICAS": "3", "OVN_ELECTION_TIMER_MS": "2000", "OVN_INACTIVITY_PROBE_MS": "60000",
			"POD_NAME": pod, "POD_NAMESPACE": "openstack",
		}
	}
	c0 := ovnFixture(t, "c-nb-0", memberContainer("nb"), env("c-nb-0"))
	cmd0, err := OVNCentralMemberMapping().Build(c0)
	if err != nil {
		t.Fatal(err)
	}
	own0 := OwnPodAddress("openstack", "c-nb-0")
	claim, tls := c0.Mounts[0].HostPath, c0.Mounts[1].HostPath
	db := filepath.Join(claim, "ovnnb_db.db")
	if cmd0.Path != shellPath || len(cmd0.Args) != 2 || cmd0.Args[0] != "-c" {
		t.Fatalf("command = %s %q", cmd0.Path, cmd0.Args)
	}
	script := cmd0.Args[1]
	for _, want := range []string{
		"if [ ! -s '" + db + "' ]; then '/usr/bin/ovsdb-tool' '--election-timer=2000' 'create-cluster' '" + db + "' '" + OVNNorthboundSchema + "' 'ssl:" + own0 + ":6643'; fi",
		`"target":"pssl:6641:` + own0 + `"`,
		`"inactivity_probe":60000`,
		"'exec' '" + OVSDBServerPath + "' '" + db + "' '" + filepath.Join(c0.WorkDir, "local_config.db") + "'",
		"'--unixctl=" + filepath.Join(c0.WorkDir, "ovsdb-server.ctl") + "'",
		"'--remote=db:Local_Config,Config,connections'",
		"'--private-key=" + filepath.Join(tls, "tls.key") + "' '--certificate=" + filepath.Join(tls, "tls.crt") + "' '--ca-cert=" + filepath.Join(tls, "ca.crt") + "'",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("member 0's script lacks %s:\n%s", want, script)
		}
	}
	if cmd0.Env["OVS_RUNDIR"] != c0.WorkDir || cmd0.Env["OVN_DBDIR"] != claim {
		t.Errorf("env = %v", cmd0.Env)
	}

	c1 := ovnFixture(t, "c-nb-1", memberContainer("nb"), env("c-nb-1"))
	cmd1, err := OVNCentralMemberMapping().Build(c1)
	if err != nil {
		t.Fatal(err)
	}
	db1 := filepath.Join(c1.Mounts[0].HostPath, "ovnnb_db.db")
	join := "'/usr/bin/ovsdb-tool' 'join-cluster' '" + db1 + "' 'OVN_Northbound' 'ssl:" + OwnPodAddress("openstack", "c-nb-1") + ":6643' 'ssl:" + own0 + ":6643'"
	if !strings.Contains(cmd1.Args[1], join) || strings.Contains(cmd1.Args[1], "election-timer") {
		t.Errorf("member 1's script does not join through member 0:\n%s", cmd1.Args[1])
	}
}

func TestCentralMemberDefaultsAndErrors(t *testing.T) {
	// The southbound ports are the contract's defaults; no probe leaves
	// ovsdb-server's own.
	c := ovnFixture(t, "c-sb-0", memberContainer("sb"), map[string]string{"OVN_DB": "sb", "OVN_PEER_SERVICE": "c-sb"})
	cmd, err := OVNCentralMemberMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if s := cmd.Args[1]; !strings.Contains(s, "pssl:6642:") || !strings.Contains(s, ":6644'") || strings.Contains(s, "inactivity_probe") {
		t.Errorf("script:\n%s", s)
	}

	tests := []struct {
		name    string
		pod     string
		env     map[string]string
		unmount string
		want    string
	}{
		{"bad database", "c-nb-0", map[string]string{"OVN_DB": "xb", "OVN_PEER_SERVICE": "c-nb"}, "", `OVN_DB="xb" is neither nb nor sb`},
		{"no peer service", "c-nb-0", map[string]string{"OVN_DB": "nb"}, "", "OVN_PEER_SERVICE is not set"},
		{"not a member", "other-0", map[string]string{"OVN_DB": "nb", "OVN_PEER_SERVICE": "c-nb"}, "", `pod "other-0" is not a member of c-nb`},
		{"bad port", "c-nb-0", map[string]string{"OVN_DB": "nb", "OVN_PEER_SERVICE": "c-nb", "OVN_DB_PORT": "x"}, "", `OVN_DB_PORT="x" is not a non-negative integer`},
		{"no claim", "c-nb-0", map[string]string{"OVN_DB": "nb", "OVN_PEER_SERVICE": "c-nb"}, "/var/lib/ovn", "no volume is mounted at /var/lib/ovn"},
		{"no TLS", "c-nb-0", map[string]string{"OVN_DB": "nb", "OVN_PEER_SERVICE": "c-nb"}, "/etc/ovn/tls", "no volume is mounted at /etc/ovn/tls"},
	}
	for _, tt := range tests {
		c := ovnFixture(t, tt.pod, memberContainer("nb"), tt.env)
		c.Mounts = slices.DeleteFunc(c.Mounts, func(m Mount) bool { return m.MountPath == tt.unmount })
		if _, err := OVNCentralMemberMapping().Build(c); err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestNorthdCommand(t *testing.T) {
	c := ovnFixture(t, "c-northd-abc", corev1.Container{Name: "ovn-northd"}, map[string]string{
		"OVN_NB_DB":          "ssl:c-nb-0.c-nb.openstack.svc.cluster.local:6641,ssl:c-nb-1.c-nb.openstack.svc.cluster.local:6641",
		"OVN_SB_DB":          "ssl:10.96.0.9:6642",
		"OVN_NORTHD_THREADS": "2",
	})
	cmd, err := OVNNorthdMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	tls := c.Mounts[1].HostPath
	want := []string{
		"--ovnnb-db=ssl:" + OwnPodAddress("openstack", "c-nb-0") + ":6641,ssl:" + OwnPodAddress("openstack", "c-nb-1") + ":6641",
		"--ovnsb-db=ssl:127.30.0.1:16642",
		"--private-key=" + filepath.Join(tls, "tls.key"), "--certificate=" + filepath.Join(tls, "tls.crt"), "--ca-cert=" + filepath.Join(tls, "ca.crt"),
		"--pidfile=" + filepath.Join(c.WorkDir, "ovn-northd.pid"),
		"--unixctl=" + filepath.Join(c.WorkDir, "ovn-northd.ctl"),
		"--log-file=" + filepath.Join(c.WorkDir, "ovn-northd.log"),
		"--n-threads=2",
	}
	if cmd.Path != OVNNorthdPath || !slices.Equal(cmd.Args, want) {
		t.Errorf("command = %s %q\nwant %q", cmd.Path, cmd.Args, want)
	}
	c.Env["OVN_SB_DB"] = ""
	if _, err := OVNNorthdMapping().Build(c); err == nil || !strings.HasPrefix(err.Error(), "OVN_SB_DB: no address") {
		t.Errorf("an empty OVN_SB_DB: err = %v", err)
	}
}

// TestChassisCommands checks the OVS pod's commands: every path is the
// node's, since the chassis pod mounts none of them here.
func TestChassisCommands(t *testing.T) {
	c := ovnFixture(t, "ch-ovs-x", corev1.Container{Name: "host-prepare"}, nil)
	c.Mounts = nil
	run := filepath.Join(c.HostRoot, "run", "openvswitch")
	db := filepath.Join(c.HostRoot, "etc", "openvswitch", "conf.db")

	prep, err := buildHostPrepare(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"'echo' '" + strings.ReplaceAll(modprobeSkipped, "'", `'\''`) + "'",
		"'mkdir' '-p' '" + run + "' '" + filepath.Join(c.HostRoot, "run", "ovn") + "'",
		"if [ ! -s '" + db + "' ]; then '" + OVSDBToolPath + "' 'create' '" + db + "' '" + OVSSchema + "'",
		"'needs-conversion'", "'convert'",
	} {
		if !strings.Contains(prep.Args[1], want) {
			t.Errorf("host-prepare lacks %s:\n%s", want, prep.Args[1])
		}
	}

	ovsdb, _ := buildOVSDBServer(c)
	if want := []string{db, "--remote=punix:" + filepath.Join(run, "db.sock"), "--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
		"--pidfile=" + filepath.Join(run, "ovsdb-server.pid"), "--log-file=" + filepath.Join(c.WorkDir, "ovsdb-server.log")}; !slices.Equal(ovsdb.Args, want) {
		t.Errorf("ovsdb-server args = %q\nwant %q", ovsdb.Args, want)
	}
	vswitchd, _ := buildVswitchd(c)
	if !slices.Contains(vswitchd.Args, "--enable-dummy=override") || vswitchd.Args[0] != "unix:"+filepath.Join(run, "db.sock") || vswitchd.Env["OVS_RUNDIR"] != run {
		t.Errorf("ovs-vswitchd = %q, env %v", vswitchd.Args, vswitchd.Env)
	}
}

func TestApplyNodeCommand(t *testing.T) {
	spec := corev1.Container{Name: "apply-node"}
	c := ovnFixture(t, "ch-ctl-x", spec, map[string]string{
		"NODE_NAME": "node-1", "NODE_IP": HostIP, "OVN_REMOTE": "ssl:10.96.0.9:6642", "OVN_REMOTE_PROBE_INTERVAL_MS": "30000",
	})
	nodes := c.Mounts[2].HostPath
	if _, err := buildApplyNode(c); err == nil || !strings.Contains(err.Error(), "the entry of node node-1") {
		t.Errorf("without the entry: err = %v", err)
	}
	if err := os.MkdirAll(nodes, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := "# rendered\nSYSTEM_ID='0d9c1a3e-5f0b-4c52-9f3e-2b1d7c8a6e11'\nexport GATEWAY=true\nBRIDGE_MAPPINGS=\"physnet1:br-ex,physnet2:br-vlan\"\nENCAP_TYPE=vxlan\nLEAVING=false\n"
	if err := os.WriteFile(filepath.Join(nodes, "node-1"), []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, err := buildApplyNode(c)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(c.HostRoot, "run", "openvswitch", "db.sock")
	want := []string{
		"--db=unix:" + sock, "--no-wait", "--timeout=30", "--", "init", "--", "set", "Open_vSwitch", ".",
		`external_ids:system-id="0d9c1a3e-5f0b-4c52-9f3e-2b1d7c8a6e11"`,
		`external_ids:hostname="node-1"`,
		`external_ids:ovn-remote="ssl:127.30.0.1:16642"`,
		`external_ids:ovn-encap-type="vxlan"`,
		`external_ids:ovn-encap-ip="` + NodeEncapAddress("node-1") + `"`,
		`external_ids:ovn-remote-probe-interval="30000"`,
		`external_ids:ovn-bridge-datapath-type="dummy"`,
		`external_ids:ovn-bridge-mappings="physnet1:br-ex,physnet2:br-vlan"`,
		`external_ids:ovn-cms-options="enable-chassis-as-gw"`,
		"--", "--may-exist", "add-br", "br-ex", "--", "--may-exist", "add-br", "br-vlan",
	}
	if cmd.Path != OVSVsctlPath || !slices.Equal(cmd.Args, want) {
		t.Errorf("ovs-vsctl %q\nwant %q", cmd.Args, want)
	}

	// Neither gateway nor mappings: both keys are removed, no bridge added.
	if err := os.WriteFile(filepath.Join(nodes, "node-1"), []byte("SYSTEM_ID=abc\nGATEWAY=false\nBRIDGE_MAPPINGS=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, err = buildApplyNode(c)
	if err != nil {
		t.Fatal(err)
	}
	tail := strings.Join(cmd.Args[len(cmd.Args)-12:], " ")
	if tail != "-- remove Open_vSwitch . external_ids ovn-bridge-mappings -- remove Open_vSwitch . external_ids ovn-cms-options" ||
		!slices.Contains(cmd.Args, `external_ids:ovn-encap-type="geneve"`) {
		t.Errorf("ovs-vsctl %q", cmd.Args)
	}
}

// installIdentity writes what a node's identity Job installs into the
// container's /etc/ovn/tls.
func installIdentity(t *testing.T, c Container) {
	t.Helper()
	dir, err := mountedDir(c, ovnTLSDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOVNControllerCommand(t *testing.T) {
	c := ovnFixture(t, "ch-ctl-x", corev1.Container{Name: "ovn-controller"}, map[string]string{"OVN_REMOTE": "ssl:10.96.0.9:6642"})
	// Without the node's identity the build waits, as the image's script
	// waits for the files.
	if _, err := buildOVNController(c); err == nil || !strings.Contains(err.Error(), "no chassis identity") {
		t.Fatalf("without an identity: %v, want a wait for it", err)
	}
	installIdentity(t, c)
	cmd, err := buildOVNController(c)
	if err != nil {
		t.Fatal(err)
	}
	tls := c.Mounts[1].HostPath
	ovnRun := filepath.Join(c.HostRoot, "run", "ovn")
	want := []string{
		"unix:" + filepath.Join(c.HostRoot, "run", "openvswitch", "db.sock"),
		"--private-key=" + filepath.Join(tls, "tls.key"), "--certificate=" + filepath.Join(tls, "tls.crt"), "--ca-cert=" + filepath.Join(tls, "ca.crt"),
		"--pidfile=" + filepath.Join(ovnRun, "ovn-controller.pid"), "--log-file=" + filepath.Join(c.WorkDir, "ovn-controller.log"),
	}
	if !slices.Equal(cmd.Args, want) || cmd.Env["OVN_RUNDIR"] != ovnRun || cmd.Env["OVS_RUNDIR"] != filepath.Join(c.HostRoot, "run", "openvswitch") {
		t.Errorf("ovn-controller %q env %v\nwant %q", cmd.Args, cmd.Env, want)
	}
}

func TestParseNodeEntry(t *testing.T) {
	got := parseNodeEntry([]byte("A=1\n  # c\nexport B='two words'\nC=\"x=y\"\nnot a line\n1X=bad\n"))
	if len(got) != 3 || got["A"] != "1" || got["B"] != "two words" || got["C"] != "x=y" {
		t.Errorf("parseNodeEntry = %v", got)
	}
	if b := mappedBridges(" p1:br-a , bad, p2:br-b,p3:"); !slices.Equal(b, []string{"br-a", "br-b"}) {
		t.Errorf("mappedBridges = %v", b)
	}
}
