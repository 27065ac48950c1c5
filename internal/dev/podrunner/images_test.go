package podrunner

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestImageRepository(t *testing.T) {
	tests := []struct{ image, want string }{
		{"nova", "nova"},
		{"nova:2026.1", "nova"},
		{"quay.io/c5c3/nova:2026.1", "quay.io/c5c3/nova"},
		{"registry:5000/c5c3/nova-compute", "registry:5000/c5c3/nova-compute"},
		{"registry:5000/c5c3/nova-compute:1.2", "registry:5000/c5c3/nova-compute"},
		{"quay.io/c5c3/nova@sha256:abcd", "quay.io/c5c3/nova"},
		{"quay.io/c5c3/nova:1@sha256:abcd", "quay.io/c5c3/nova"},
	}
	for _, tt := range tests {
		if got := ImageRepository(tt.image); got != tt.want {
			t.Errorf("ImageRepository(%q) = %q, want %q", tt.image, got, tt.want)
		}
	}
}

// TestDefaultImageMapLookup decides which containers become local Nova
// programs; anything else must stay unmapped and be simulated.
func TestDefaultImageMapLookup(t *testing.T) {
	tests := []struct {
		name      string
		container corev1.Container
		want      string // mapping name; "" for none
	}{
		{"nova image running nova-compute", corev1.Container{Name: "compute", Image: "quay.io/c5c3/nova:2026.1", Command: []string{"nova-compute"}}, "nova-compute"},
		{"absolute program path", corev1.Container{Name: "c", Image: "quay.io/c5c3/nova", Command: []string{"/usr/bin/nova-compute", "--config-file", "/etc/nova/nova.conf"}}, "nova-compute"},
		{"program in args", corev1.Container{Name: "c", Image: "quay.io/c5c3/nova", Args: []string{"nova-compute"}}, "nova-compute"},
		{"named nova-compute with a wrapper", corev1.Container{Name: "nova-compute", Image: "quay.io/c5c3/nova", Command: []string{"/entrypoint.sh"}}, "nova-compute"},
		{"nova-compute image entry point", corev1.Container{Name: "c", Image: "quay.io/c5c3/nova-compute:2026.1"}, "nova-compute"},
		{"nova-compute image, other program", corev1.Container{Name: "c", Image: "quay.io/c5c3/nova-compute:2026.1", Command: []string{"sleep", "1"}}, ""},
		{"shell script running nova-compute", corev1.Container{Name: "c", Image: "quay.io/c5c3/nova", Command: []string{"/bin/sh", "-c", "set -e; exec nova-compute --debug"}}, "nova-compute"},
		{"nova-manage", corev1.Container{Name: "discover", Image: "quay.io/c5c3/nova:2026.1", Command: []string{"nova-manage", "cell_v2", "discover_hosts"}}, "nova-manage"},
		{"nova-manage wins over the name", corev1.Container{Name: "nova-compute", Image: "quay.io/c5c3/nova", Command: []string{"nova-manage", "db", "sync"}}, "nova-manage"},
		{"nova-manage in a script", corev1.Container{Name: "c", Image: "quay.io/c5c3/nova-api", Command: []string{"bash", "-c", "OS_DEBUG=1 nova-manage cell_v2 discover_hosts --verbose && echo done"}}, "nova-manage"},
		{"nova-api image running the api", corev1.Container{Name: "api", Image: "quay.io/c5c3/nova-api", Command: []string{"nova-api"}}, ""},
		{"other image named nova-compute", corev1.Container{Name: "nova-compute", Image: "busybox", Command: []string{"nova-compute"}}, ""},
		{"novalike image", corev1.Container{Name: "nova-compute", Image: "quay.io/c5c3/novafoo"}, ""},
		{"unrelated image", corev1.Container{Name: "c", Image: "example.invalid/probe:1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := DefaultImageMap().Lookup(&tt.container)
			got := ""
			if ok {
				got = m.Name
			}
			if got != tt.want {
				t.Errorf("Lookup = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestImageMapFirstMatchWins(t *testing.T) {
	shell := Mapping{Name: "sh", Match: MatchImage("quay.io/c5c3/nova")}
	m := append(ImageMap{shell}, DefaultImageMap()...)
	got, ok := m.Lookup(&corev1.Container{Image: "quay.io/c5c3/nova:1", Command: []string{"nova-compute"}})
	if !ok || got.Name != "sh" {
		t.Errorf("Lookup = %q, %v; want the first entry", got.Name, ok)
	}
}

func TestInvocation(t *testing.T) {
	tests := []struct {
		name   string
		argv   []string
		want   []string
		wantOK bool
	}{
		{"direct", []string{"nova-manage", "db", "sync"}, []string{"db", "sync"}, true},
		{"path", []string{"/usr/local/bin/nova-manage"}, []string{}, true},
		{"other program", []string{"nova-api"}, nil, false},
		{"shell exec", []string{"sh", "-c", "exec nova-manage cell_v2 discover_hosts"}, []string{"cell_v2", "discover_hosts"}, true},
		{"shell with -e", []string{"/bin/bash", "-ec", "x"}, nil, false},
		{"shell second command", []string{"sh", "-c", "echo hi; nova-manage 'db' sync\nexit 0"}, []string{"db", "sync"}, true},
		{"shell assignment prefix", []string{"sh", "-c", "A=1 B=2 nova-manage db sync | tee x"}, []string{"db", "sync"}, true},
		{"shell without the program", []string{"sh", "-c", "echo nova-manage"}, nil, false},
		{"empty", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := invocation(tt.argv, "nova-manage")
			if ok != tt.wantOK || (ok && !reflect.DeepEqual(got, tt.want)) {
				t.Errorf("invocation = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// novaFixture materialises a contract Secret the way the runner would and
// returns the container view a mapping receives.
func novaFixture(t *testing.T, spec corev1.Container) Container {
	t.Helper()
	root := t.TempDir()
	secretDir := filepath.Join(root, "volumes", "compute-config")
	cmDir := filepath.Join(root, "volumes", "extra")
	for dir, files := range map[string]map[string]string{
		secretDir: {
			"nova-compute.conf": "[DEFAULT]\ntransport_url = rabbit://nova:s3cret@127.0.0.1:5672/\n\n[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = /etc/nova/compute-config/ca.crt\n# ssl_cert_file = /etc/nova/compute-config/commented.crt\n",
			"ca.crt":            "CA",
			"password":          "s3cret",
		},
		cmDir: {"10-extra.conf": "[DEFAULT]\nhost = ignored\nlog_dir: /var/log/nova\n[vnc]\nenabled = false\n", "README": "x"},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Container{
		Pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "openstack"}},
		Spec:     &spec,
		NodeName: "node-1",
		WorkDir:  filepath.Join(root, "containers", spec.Name),
		Mounts: Mounts{
			{MountPath: "/var/lib/nova", HostPath: filepath.Join(root, "host", "var", "lib", "nova"), Kind: VolumeHostPath},
			{MountPath: "/etc/nova/compute-config", HostPath: secretDir, Kind: VolumeSecret, Files: []string{"ca.crt", "nova-compute.conf", "password"}},
			{MountPath: "/etc/nova/extra", HostPath: cmDir, Kind: VolumeConfigMap, Files: []string{"10-extra.conf", "README"}},
		},
		Env: map[string]string{"CELL": "cell1"},
	}
}

// TestNovaComputeCommand checks the argv and the generated configuration
// of nova-compute configured from the contract Secret.
func TestNovaComputeCommand(t *testing.T) {
	c := novaFixture(t, corev1.Container{
		Name:    "nova-compute",
		Image:   "quay.io/c5c3/nova:2026.1",
		Command: []string{"nova-compute", "--config-file", "/etc/nova/nova.conf", "--config-file=/etc/nova/extra/10-extra.conf"},
	})
	cmd, err := NovaComputeMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	secretConf := c.Mounts[1].HostPath + "/nova-compute.conf"
	extraConf := c.Mounts[2].HostPath + "/10-extra.conf"
	overrides := filepath.Join(c.WorkDir, OverridesFile)
	// The image's /etc/nova/nova.conf is dropped; the explicitly named
	// mounted file keeps its place; the Secret's file follows; the
	// generated file is last.
	wantArgs := []string{
		"-c", NovaComputeLauncher,
		"--config-file", extraConf,
		"--config-file", secretConf,
		"--config-file", overrides,
	}
	if cmd.Path != PythonPath || !reflect.DeepEqual(cmd.Args, wantArgs) {
		t.Errorf("argv = %s %q\nwant %s %q", cmd.Path, cmd.Args, PythonPath, wantArgs)
	}
	wantConf := strings.Join([]string{
		"# Generated by anvil-podrunner: the options that make this container run on a",
		"# local host. Passed last, so they win over every other file.",
		"",
		"[DEFAULT]",
		"host = node-1",
		"state_path = " + c.WorkDir + "/state",
		"instances_path = " + c.WorkDir + "/instances",
		"compute_driver = fake.FakeDriver",
		"",
		"[oslo_concurrency]",
		"lock_path = " + c.WorkDir + "/lock",
		"",
		"[oslo_messaging_rabbit]",
		"ssl_ca_file = " + c.Mounts[1].HostPath + "/ca.crt",
		"",
	}, "\n")
	if got := string(cmd.Files[overrides]); got != wantConf {
		t.Errorf("overrides:\n%s\nwant:\n%s", got, wantConf)
	}
	if len(cmd.Files) != 1 {
		t.Errorf("files = %v, want only the overrides", cmd.Files)
	}
	for _, a := range cmd.Args {
		if strings.Contains(a, "s3cret") {
			t.Errorf("an argument carries the password: %q", a)
		}
	}
	if strings.Contains(string(cmd.Files[overrides]), "s3cret") {
		t.Error("the generated file copies the transport URL")
	}
	wantDirs := []string{c.WorkDir + "/state", c.WorkDir + "/instances", c.WorkDir + "/lock"}
	if !reflect.DeepEqual(cmd.Dirs, wantDirs) {
		t.Errorf("dirs = %v, want %v", cmd.Dirs, wantDirs)
	}
}

func TestNovaComputeDiscoversMountedConfig(t *testing.T) {
	c := novaFixture(t, corev1.Container{Name: "nova-compute", Image: "quay.io/c5c3/nova-compute:2026.1"})
	cmd, err := NovaComputeMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-c", NovaComputeLauncher,
		"--config-file", c.Mounts[1].HostPath + "/nova-compute.conf",
		"--config-file", c.Mounts[2].HostPath + "/10-extra.conf",
		"--config-file", filepath.Join(c.WorkDir, OverridesFile),
	}
	if !reflect.DeepEqual(cmd.Args, want) {
		t.Errorf("args = %q\nwant %q", cmd.Args, want)
	}
}

func TestNovaManageCommand(t *testing.T) {
	c := novaFixture(t, corev1.Container{
		Name:    "discover",
		Image:   "quay.io/c5c3/nova:2026.1",
		Command: []string{"/bin/sh", "-c", "exec nova-manage --config-dir /etc/nova/extra cell_v2 discover_hosts --by-service --state /var/lib/nova/x"},
	})
	c.Spec.Env = nil
	cmd, err := NovaManageMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--config-file", c.Mounts[1].HostPath + "/nova-compute.conf",
		"--config-file", c.Mounts[2].HostPath + "/10-extra.conf",
		"--config-dir", c.Mounts[2].HostPath,
		"--config-file", filepath.Join(c.WorkDir, OverridesFile),
		"cell_v2", "discover_hosts", "--by-service", "--state", c.Mounts[0].HostPath + "/x",
	}
	if cmd.Path != NovaManagePath || !reflect.DeepEqual(cmd.Args, want) {
		t.Errorf("argv = %s %q\nwant %s %q", cmd.Path, cmd.Args, NovaManagePath, want)
	}
	if strings.Contains(string(cmd.Files[filepath.Join(c.WorkDir, OverridesFile)]), "compute_driver") {
		t.Error("nova-manage got the compute driver")
	}
}

func TestNovaManageExpandsPlainEnvOnly(t *testing.T) {
	c := novaFixture(t, corev1.Container{
		Name:    "map",
		Image:   "quay.io/c5c3/nova",
		Command: []string{"nova-manage", "cell_v2", "create_cell", "--name", "$(CELL)", "--transport-url", "$(TRANSPORT_URL)"},
	})
	cmd, err := NovaManageMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	tail := cmd.Args[len(cmd.Args)-6:]
	// TRANSPORT_URL is not in Env because it came from a Secret; it stays
	// a literal reference rather than putting the credential on argv.
	want := []string{"cell_v2", "create_cell", "--name", "cell1", "--transport-url", "$(TRANSPORT_URL)"}
	if !reflect.DeepEqual(tail, want) {
		t.Errorf("args end %q, want %q", tail, want)
	}
}

func TestNovaWithoutConfigFails(t *testing.T) {
	c := Container{
		Spec:     &corev1.Container{Name: "nova-compute", Image: "quay.io/c5c3/nova"},
		NodeName: "n",
		WorkDir:  t.TempDir(),
	}
	if _, err := NovaComputeMapping().Build(c); err == nil {
		t.Error("want an error without any configuration file")
	}
}

func TestINIOptions(t *testing.T) {
	data := "top = 1\n[DEFAULT]\n# c = 1\n; d = 2\na = x = y\nb: /p\n  continued = no\n[s]\nc=\n[bad\n"
	want := []iniOption{
		{"DEFAULT", "top", "1"},
		{"DEFAULT", "a", "x = y"},
		{"DEFAULT", "b", "/p"},
		{"s", "c", ""},
	}
	if got := iniOptions([]byte(data)); !reflect.DeepEqual(got, want) {
		t.Errorf("iniOptions = %+v, want %+v", got, want)
	}
}

// TestNovaManageScript runs a script that calls nova-manage twice through
// the generated wrapper, with echo standing in for nova-manage: every call
// gets the local configuration, and the container's own --config-file is
// dropped.
func TestNovaManageScript(t *testing.T) {
	script := `if nova-manage --config-file /etc/nova/extra/10-extra.conf cell_v2 list_cells | grep -q ' cell1 '; then exit 0; fi
exec nova-manage --config-file=/etc/nova/extra/10-extra.conf cell_v2 create_cell --name cell1`
	c := novaFixture(t, corev1.Container{Name: "cell1", Image: "quay.io/c5c3/nova:2026.1", Command: []string{"sh", "-c", script}})
	cmd, err := NovaManageMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != "/bin/sh" || !reflect.DeepEqual(cmd.Args, []string{"-c", script}) {
		t.Fatalf("argv = %s %q, want the script under /bin/sh", cmd.Path, cmd.Args)
	}
	bin := filepath.Join(c.WorkDir, "bin")
	wrapper, ok := cmd.Executables[filepath.Join(bin, "nova-manage")]
	if !ok || !reflect.DeepEqual(cmd.PathDirs, []string{bin}) {
		t.Fatalf("no nova-manage wrapper on PATH: %v %v", cmd.PathDirs, cmd.Executables)
	}
	fake := strings.Replace(string(wrapper), "exec "+NovaManagePath, "exec echo", 1)
	out, err := exec.Command("/bin/sh", "-c", fake, "nova-manage", "--config-file", "/etc/nova/x.conf", "cell_v2", "create_cell", "--config-dir=/y", "--name", "cell1").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(out))
	want := append(append([]string(nil), strings.Fields(strings.Join(mustNovaArgs(t, c), " "))...), "cell_v2", "create_cell", "--name", "cell1")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("wrapper ran %q\nwant %q", got, want)
	}
}

func mustNovaArgs(t *testing.T, c Container) []string {
	t.Helper()
	local, err := novaArgs(c, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return local.Args
}
