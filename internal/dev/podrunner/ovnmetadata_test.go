package podrunner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testAgentINI is the agent's ini as the NeutronMetadataAgent controller
// renders it, with a member name and a cluster IP for the runner to
// translate.
const testAgentINI = `[DEFAULT]
state_path = /var/lib/neutron
metadata_workers = 2
nova_metadata_host = 10.96.0.20
nova_metadata_port = 8775
nova_metadata_protocol = https
auth_ca_cert = /etc/nova-metadata-ca/ca.crt
[agent]
root_helper = env
[ovs]
ovsdb_connection = unix:/run/openvswitch/db.sock
[ovn]
ovn_sb_connection = ssl:c-sb-0.c-sb.openstack.svc.cluster.local:6642,ssl:10.96.0.9:6642
ovn_sb_private_key = /etc/ovn/tls/tls.key
ovn_sb_certificate = /etc/ovn/tls/tls.crt
ovn_sb_ca_cert = /etc/ovn/tls/ca.crt
[oslo_concurrency]
lock_path = /var/lib/neutron/lock
`

// agentFixture is what the runner hands the agent's mapping on a node
// with a namespace of its own, with the ini written into its mount.
func agentFixture(t *testing.T) Container {
	t.Helper()
	old := agentHostPrograms
	t.Cleanup(func() { agentHostPrograms = old })
	agentHostPrograms = nil
	c := ovnFixture(t, "agent-x", corev1.Container{
		Name: "metadata-agent", Command: []string{"neutron-ovn-metadata-agent", "--config-file", "/etc/neutron/neutron_ovn_metadata_agent.ini"},
	}, nil)
	root := filepath.Dir(c.WorkDir)
	c.NetNS = "anvil-0123abcd"
	c.Mounts = append(c.Mounts,
		Mount{MountPath: "/etc/neutron", HostPath: filepath.Join(root, "config"), Kind: VolumeConfigMap, Files: []string{"neutron_ovn_metadata_agent.ini"}},
		Mount{MountPath: "/var/lib/neutron", HostPath: filepath.Join(root, "state"), Kind: VolumeEmptyDir},
		Mount{MountPath: "/run/openvswitch", HostPath: filepath.Join(c.HostRoot, "run", "openvswitch"), Kind: VolumeHostPath},
		Mount{MountPath: "/etc/nova-metadata-ca", HostPath: filepath.Join(root, "ca"), Kind: VolumeSecret, Files: []string{"ca.crt"}},
	)
	if err := os.MkdirAll(filepath.Join(root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "config", "neutron_ovn_metadata_agent.ini"), []byte(testAgentINI), 0o644); err != nil {
		t.Fatal(err)
	}
	inner := c.Resolve
	c.Resolve = func(host string, port int) (string, int, error) {
		if host == "10.96.0.20" {
			return "127.40.0.2", 18775, nil
		}
		return inner(host, port)
	}
	return c
}

func TestOVNMetadataAgentMappingsLookup(t *testing.T) {
	m := OVNMetadataAgentMappings()
	for _, tc := range []struct {
		c    corev1.Container
		want string
	}{
		{corev1.Container{Name: "wait-for-chassis", Command: []string{"/bin/bash", "/scripts/wait-for-chassis.sh"},
			Env: []corev1.EnvVar{{Name: "OVN_SB_CONNECTION", Value: "ssl:10.96.0.9:6642"}}}, "ovn-wait-for-chassis"},
		// The pool's init container of that name waits on the node's OVS
		// database alone; it is not the agent's.
		{corev1.Container{Name: "wait-for-chassis", Command: []string{"python3", "-c", "..."},
			Env: []corev1.EnvVar{{Name: "OVSDB_SOCKET", Value: "/run/openvswitch/db.sock"}}}, ""},
		{corev1.Container{Name: "metadata-agent", Command: []string{"neutron-ovn-metadata-agent", "--config-file", "/x.ini"}}, metadataAgentProgram},
		{corev1.Container{Name: "other", Command: []string{"/bin/sh", "-c", "exec neutron-ovn-metadata-agent"}}, metadataAgentProgram},
		{corev1.Container{Name: "metadata-agent"}, metadataAgentProgram},
		{corev1.Container{Name: "metadata-agent", Command: []string{"sleep", "1"}}, ""},
	} {
		got, ok := m.Lookup(&tc.c)
		if (tc.want == "") == ok || (ok && got.Name != tc.want) {
			t.Errorf("Lookup(%s %q) = %q, %v; want %q", tc.c.Name, tc.c.Command, got.Name, ok, tc.want)
		}
	}
}

func TestWaitForChassisCommand(t *testing.T) {
	c := ovnFixture(t, "agent-x", corev1.Container{Name: "wait-for-chassis"}, map[string]string{"OVN_SB_CONNECTION": "ssl:10.96.0.9:6642"})
	cmd, err := buildWaitForChassis(c)
	if err != nil {
		t.Fatal(err)
	}
	tls := c.Mounts[1].HostPath
	script := cmd.Args[1]
	for _, want := range []string{
		"'--db=unix:" + filepath.Join(c.HostRoot, "run", "openvswitch", "db.sock") + "'",
		"'external_ids:system-id'",
		"'" + OVNSbctlPath + "' '--db=ssl:127.30.0.1:16642' '--no-leader-only'",
		"'--private-key=" + filepath.Join(tls, "tls.key") + "'",
		"'find' 'Chassis_Private' \"name=\\\"$id\\\"\"",
		"exit 0", "sleep 2",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("wait-for-chassis lacks %s:\n%s", want, script)
		}
	}
	if cmd.Path != shellPath || len(cmd.Relays) != 0 {
		t.Errorf("wait-for-chassis runs %s with relays %v; it belongs on the host's network", cmd.Path, cmd.Relays)
	}
	c.Env = map[string]string{}
	if _, err := buildWaitForChassis(c); err == nil || !strings.Contains(err.Error(), "OVN_SB_CONNECTION is empty") {
		t.Errorf("without OVN_SB_CONNECTION: err = %v", err)
	}
}

func TestMetadataAgentCommand(t *testing.T) {
	c := agentFixture(t)
	cmd, err := buildMetadataAgent(c)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(c.WorkDir)
	overrides := filepath.Join(c.WorkDir, OverridesFile)
	want := []string{
		"--net=/run/netns/anvil-0123abcd", NeutronOVNMetadataAgentPath,
		"--config-file", filepath.Join(root, "config", "neutron_ovn_metadata_agent.ini"),
		"--config-file", overrides,
	}
	if cmd.Path != NsenterPath || !slices.Equal(cmd.Args, want) {
		t.Errorf("agent %s %q\nwant %s %q", cmd.Path, cmd.Args, NsenterPath, want)
	}
	socketDir := filepath.Join("/run/anvil-podrunner/anvil-0123abcd", shortHash(c.WorkDir))
	got := string(cmd.Files[overrides])
	for _, line := range []string{
		"host = node-1",
		"state_path = " + filepath.Join(root, "state"),
		"metadata_proxy_socket = " + socketDir + "/metadata_proxy",
		"nova_metadata_host = 127.40.0.2",
		"nova_metadata_port = 18775",
		"auth_ca_cert = " + filepath.Join(root, "ca", "ca.crt"),
		"ovsdb_connection = unix:" + filepath.Join(c.HostRoot, "run", "openvswitch", "db.sock"),
		"ovn_sb_connection = ssl:" + OwnPodAddress("openstack", "c-sb-0") + ":6642,ssl:127.30.0.1:16642",
		"ovn_sb_private_key = " + filepath.Join(c.Mounts[1].HostPath, "tls.key"),
		"lock_path = " + filepath.Join(root, "state", "lock"),
	} {
		if !strings.Contains(got, "\n"+line+"\n") {
			t.Errorf("the overrides lack %q:\n%s", line, got)
		}
	}
	if !strings.HasPrefix(got, "# Generated") || strings.Index(got, "[DEFAULT]") > strings.Index(got, "[ovn]") {
		t.Errorf("the overrides are not in order:\n%s", got)
	}
	if len(socketDir+"/metadata_proxy") > 107 {
		t.Errorf("the proxy socket's path %s is too long for a unix socket", socketDir)
	}
	wantRelays := []string{OwnPodAddress("openstack", "c-sb-0") + ":6642", "127.30.0.1:16642", "127.40.0.2:18775"}
	if !slices.Equal(cmd.Relays, wantRelays) {
		t.Errorf("relays %q, want %q", cmd.Relays, wantRelays)
	}
	if !slices.Contains(cmd.Dirs, socketDir) || !slices.Contains(cmd.Dirs, filepath.Join(root, "state")) || cmd.BeforeStart == nil {
		t.Errorf("dirs %q, before-start set %v", cmd.Dirs, cmd.BeforeStart != nil)
	}
}

func TestMetadataAgentErrors(t *testing.T) {
	c := agentFixture(t)
	c.NetNS = ""
	if _, err := buildMetadataAgent(c); err == nil || !strings.Contains(err.Error(), "no network namespace of its own") {
		t.Errorf("on a node without a namespace: err = %v", err)
	}
	c = agentFixture(t)
	agentHostPrograms = []string{filepath.Join(t.TempDir(), "haproxy")}
	if _, err := buildMetadataAgent(c); err == nil || !strings.Contains(err.Error(), "haproxy, which is not installed") {
		t.Errorf("without haproxy: err = %v", err)
	}
	agentHostPrograms = nil
	c.Spec = &corev1.Container{Name: "metadata-agent", Command: []string{"neutron-ovn-metadata-agent", "--config-file", "/etc/neutron/elsewhere.ini"}}
	if _, err := buildMetadataAgent(c); err == nil || !strings.Contains(err.Error(), "reading elsewhere.ini") {
		t.Errorf("with a missing file: err = %v", err)
	}
	c.Spec = &corev1.Container{Name: "metadata-agent", Command: []string{"neutron-ovn-metadata-agent", "--config-file", "/image/own.ini"}}
	if _, err := buildMetadataAgent(c); err == nil || !strings.Contains(err.Error(), "no --config-file inside a mounted volume") {
		t.Errorf("with the image's file only: err = %v", err)
	}
	if _, err := agentOverrides(agentFixture(t), iniOptions([]byte("[DEFAULT]\nstate_path = /x\n"))); err == nil ||
		!strings.Contains(err.Error(), "ovn_sb_connection") {
		t.Errorf("without a Southbound: err = %v", err)
	}
}

// TestMetadataAgentSecretOnlyInEnv prepares the contract's agent pod as
// the runner does, from a Secret and a ConfigMap, and checks that the
// shared secret is in the process's environment and in no argument and
// no file the runner writes.
func TestMetadataAgentSecretOnlyInEnv(t *testing.T) {
	const secret = "the-shared-s3cret-value"
	objs := &objectStore{
		secrets: map[string]*corev1.Secret{
			"ns/shared": {Data: map[string][]byte{"shared_secret": []byte(secret)}},
			"ns/client": {Data: map[string][]byte{"tls.key": []byte("k"), "tls.crt": []byte("c"), "ca.crt": []byte("a")}},
		},
		configMaps: map[string]*corev1.ConfigMap{"ns/agent-config": {Data: map[string]string{"neutron_ovn_metadata_agent.ini": testAgentINI}}},
	}
	old := agentHostPrograms
	t.Cleanup(func() { agentHostPrograms = old })
	agentHostPrograms = nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newNodeHandler(ctx, "node-1", t.TempDir(), OVNMetadataAgentMappings(), objs, nil, logr.Discard())
	h.netns = &nodeNetwork{name: "anvil-0123abcd"}
	r := newPodRun(h, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-x", Namespace: "ns", UID: "u-1"},
		Spec: corev1.PodSpec{NodeName: "node-1", HostNetwork: true, Containers: []corev1.Container{{
			Name: "metadata-agent", Image: "neutron:2026.1",
			Command: []string{"neutron-ovn-metadata-agent", "--config-file", "/etc/neutron/neutron_ovn_metadata_agent.ini"},
			Env: []corev1.EnvVar{{Name: "OS_DEFAULT__METADATA_PROXY_SHARED_SECRET", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}, Key: "shared_secret"},
			}}},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/neutron"}, {Name: "state", MountPath: "/var/lib/neutron"},
				{Name: "ovs", MountPath: "/run/openvswitch"}, {Name: "tls", MountPath: "/etc/ovn/tls"},
			},
		}}, Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "agent-config"}}}},
			{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "ovs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/openvswitch"}}},
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "client"}}},
		}},
	})
	if err := r.prepareOnce(); err != nil {
		t.Fatal(err)
	}
	p := r.commands["metadata-agent"]
	if !slices.Contains(p.env, "OS_DEFAULT__METADATA_PROXY_SHARED_SECRET="+secret) {
		t.Error("the agent's environment lacks the shared secret")
	}
	for _, a := range append([]string{p.cmd.Path}, p.cmd.Args...) {
		if strings.Contains(a, secret) {
			t.Errorf("argument %q holds the shared secret", a)
		}
	}
	for path, data := range p.cmd.Files {
		if strings.Contains(string(data), secret) {
			t.Errorf("%s holds the shared secret", path)
		}
	}
	for k, v := range p.cmd.Env {
		if strings.Contains(v, secret) {
			t.Errorf("the mapping's variable %s holds the shared secret", k)
		}
	}
	_ = filepath.WalkDir(r.dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(path); strings.Contains(string(data), secret) {
				t.Errorf("the runner wrote the shared secret into %s", path)
			}
		}
		return nil
	})
}

func TestRenderOverrides(t *testing.T) {
	got := string(renderOverrides(map[string][][2]string{
		"ovn": {{"b", "2"}, {"a", "1"}}, "DEFAULT": {{"host", "n"}}, "agent": {{"x", "y"}},
	}))
	want := "\n[DEFAULT]\nhost = n\n\n[agent]\nx = y\n\n[ovn]\nb = 2\na = 1\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("renderOverrides =\n%s\nwant the suffix\n%s", got, want)
	}
}
