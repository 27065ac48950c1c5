package podrunner

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The contract of the control-plane containers.
const (
	cpImage     = "ghcr.io/c5c3/nova:2026.1"
	cpConfigDir = "/etc/nova/nova.conf.d"
	cpConfig    = cpConfigDir + "/nova.conf"
	cpPassword  = "bus-s3cret"
	cpPod       = "nova-api-5d8f7c9b4-x2x7q"
)

// cpNovaConf is the contract's nova.conf; the CA path exists only inside a
// container.
const cpNovaConf = "[DEFAULT]\ntransport_url = rabbit://nova:" + cpPassword + "@127.0.0.1:5671/\n\n" +
	"[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = " + cpConfigDir + "/ca.crt\n\n" +
	"[wsgi]\napi_paste_config = /etc/nova/api-paste.ini\n"

// cpFixture materialises the contract Secret {nova}-config the way the
// runner would, with nova.conf as given, and returns the container view a
// mapping receives.
func cpFixture(t *testing.T, spec corev1.Container, novaConf string) Container {
	t.Helper()
	root := t.TempDir()
	secretDir := filepath.Join(root, "volumes", "config")
	if err := os.MkdirAll(secretDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"nova.conf": novaConf, "ca.crt": "CA"} {
		if err := os.WriteFile(filepath.Join(secretDir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{}
	for _, e := range spec.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return Container{
		Pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: cpPod, Namespace: "openstack"}},
		Spec:     &spec,
		NodeName: "node-1",
		WorkDir:  filepath.Join(root, "containers", spec.Name),
		Mounts:   Mounts{{MountPath: cpConfigDir, HostPath: secretDir, Kind: VolumeSecret, Files: []string{"ca.crt", "nova.conf"}}},
		Env:      env,
	}
}

// cpWSGIContainer is the contract's nova-api or nova-metadata container.
func cpWSGIContainer(name, port, script string) corev1.Container {
	return corev1.Container{
		Name:  name,
		Image: cpImage,
		Command: []string{"uwsgi", "--http-socket", ":" + port, "--wsgi-file", script,
			"--master", "--die-on-term", "--need-app", "--lazy-apps", "--enable-threads", "--processes", "2", "--threads", "1"},
		Env: []corev1.EnvVar{
			{Name: novaConfigDirEnv, Value: cpConfigDir},
			{Name: novaConfigFilesEnv, Value: "nova.conf"},
			{Name: "TRANSPORT_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "transport_url"}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: cpConfigDir, ReadOnly: true}},
	}
}

// cpContainer is a contract container that runs program with the mounted
// nova.conf.
func cpContainer(program string) corev1.Container {
	return corev1.Container{
		Name:         program,
		Image:        cpImage,
		Command:      []string{program, "--config-file", cpConfig},
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: cpConfigDir, ReadOnly: true}},
	}
}

// TestNovaControlPlaneLookup decides which containers run as the local
// control plane once its mappings are in front of the default ones, and
// that the default map alone keeps simulating them.
func TestNovaControlPlaneLookup(t *testing.T) {
	withArgs := func(c corev1.Container, args ...string) corev1.Container {
		c.Command = args
		return c
	}
	api := cpWSGIContainer("nova-api", "8774", "/usr/bin/nova-api-wsgi")
	tests := []struct {
		name      string
		container corev1.Container
		want      string // with the control plane; "" for none
		wantDflt  string // with DefaultImageMap alone
	}{
		{"conductor", cpContainer("nova-conductor"), "nova-conductor", ""},
		{"scheduler", cpContainer("nova-scheduler"), "nova-scheduler", ""},
		{"novncproxy", cpContainer("nova-novncproxy"), "nova-novncproxy", ""},
		{"api", api, "nova-api", ""},
		{"metadata", cpWSGIContainer("nova-metadata", "8775", "/usr/bin/nova-metadata-wsgi"), "nova-metadata", ""},
		{"api, inline wsgi-file elsewhere", withArgs(api, "uwsgi", "--http-socket=:8774", "--wsgi-file=/var/lib/openstack/bin/nova-api-wsgi"), "nova-api", ""},
		{"api from a script", withArgs(api, "/bin/sh", "-c", "exec uwsgi --http-socket :8774 --wsgi-file /usr/bin/nova-api-wsgi"), "nova-api", ""},
		{"uwsgi serving another app", withArgs(api, "uwsgi", "--http-socket", ":5000", "--wsgi-file", "/usr/bin/keystone-wsgi-public"), "", ""},
		{"uwsgi without a wsgi-file", withArgs(api, "uwsgi", "--ini", "/etc/nova/uwsgi.ini"), "", ""},
		{"other image running uwsgi for nova", func() corev1.Container { c := api; c.Image = "example.invalid/uwsgi:1"; return c }(), "", ""},
		{"other image running nova-conductor", func() corev1.Container { c := cpContainer("nova-conductor"); c.Image = "busybox"; return c }(), "", ""},
		{"job still runs nova-manage", withArgs(api, "nova-manage", "--config-file", cpConfig, "api_db", "sync"), "nova-manage", "nova-manage"},
		{"nova-compute keeps its mapping", cpContainer("nova-compute"), "nova-compute", "nova-compute"},
		{"unrelated container of the pod", corev1.Container{Name: "sidecar", Image: "example.invalid/probe:1"}, "", ""},
	}
	full := append(NovaControlPlaneMappings(), DefaultImageMap()...)
	name := func(m ImageMap, c *corev1.Container) string {
		if mapping, ok := m.Lookup(c); ok {
			return mapping.Name
		}
		return ""
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := name(full, &tt.container); got != tt.want {
				t.Errorf("with the control plane: %q, want %q", got, tt.want)
			}
			if got := name(DefaultImageMap(), &tt.container); got != tt.wantDflt {
				t.Errorf("default map: %q, want %q", got, tt.wantDflt)
			}
		})
	}
}

// TestNovaServiceCommands checks conductor, scheduler and novncproxy: the
// Debian program, the mounted nova.conf, and overrides that name the pod
// and give no compute driver.
func TestNovaServiceCommands(t *testing.T) {
	tests := []struct {
		mapping  Mapping
		path     string
		prefix   []string
		extraCfg []string
	}{
		{NovaConductorMapping(), NovaConductorPath, nil, nil},
		{NovaSchedulerMapping(), NovaSchedulerPath, nil, nil},
		{NovaNoVNCProxyMapping(), PythonPath, []string{"-c", NovaNoVNCProxyLauncher}, []string{"[vnc]", "novncproxy_host = 127.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.mapping.Name, func(t *testing.T) {
			c := cpFixture(t, cpContainer(tt.mapping.Name), cpNovaConf)
			cmd, err := tt.mapping.Build(c)
			if err != nil {
				t.Fatal(err)
			}
			overrides := filepath.Join(c.WorkDir, OverridesFile)
			want := append(append([]string(nil), tt.prefix...),
				"--config-file", filepath.Join(c.Mounts[0].HostPath, "nova.conf"),
				"--config-file", overrides)
			if cmd.Path != tt.path || !reflect.DeepEqual(cmd.Args, want) {
				t.Errorf("argv = %s %q\nwant %s %q", cmd.Path, cmd.Args, tt.path, want)
			}
			conf := string(cmd.Files[overrides])
			for _, line := range append([]string{
				"host = " + cpPod,
				"ssl_ca_file = " + filepath.Join(c.Mounts[0].HostPath, "ca.crt"),
				"lock_path = " + filepath.Join(c.WorkDir, "lock"),
			}, tt.extraCfg...) {
				if !strings.Contains(conf, line+"\n") {
					t.Errorf("overrides lack %q:\n%s", line, conf)
				}
			}
			if strings.Contains(conf, "compute_driver") {
				t.Errorf("a control-plane service got a compute driver:\n%s", conf)
			}
			assertNoCredential(t, cmd)
		})
	}
}

// TestNovaNoVNCProxyOverrides checks the proxy's listener and web root.
func TestNovaNoVNCProxyOverrides(t *testing.T) {
	old := noVNCWebDir
	t.Cleanup(func() { noVNCWebDir = old })
	spec := cpContainer("nova-novncproxy")
	spec.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9000, Protocol: corev1.ProtocolUDP}, {Name: "vnc", ContainerPort: 6080}}

	for _, tt := range []struct {
		name    string
		webDir  string
		wantWeb bool
	}{
		{"host has noVNC", t.TempDir(), false},
		{"host lacks noVNC", filepath.Join(t.TempDir(), "missing"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noVNCWebDir = tt.webDir
			c := cpFixture(t, spec, cpNovaConf)
			cmd, err := NovaNoVNCProxyMapping().Build(c)
			if err != nil {
				t.Fatal(err)
			}
			conf := string(cmd.Files[filepath.Join(c.WorkDir, OverridesFile)])
			wantVNC := "\n[vnc]\nnovncproxy_host = 127.0.0.1\nnovncproxy_port = 6080\n"
			if !strings.HasSuffix(conf, wantVNC) {
				t.Errorf("overrides do not end with %q:\n%s", wantVNC, conf)
			}
			web := filepath.Join(c.WorkDir, "novnc")
			gotWeb := strings.Contains(conf, "\n[DEFAULT]\nweb = "+web+"\n")
			if gotWeb != tt.wantWeb || slices.Contains(cmd.Dirs, web) != tt.wantWeb {
				t.Errorf("web root set = %v, want %v; dirs %v:\n%s", gotWeb, tt.wantWeb, cmd.Dirs, conf)
			}
		})
	}
}

// assertNoCredential fails when the bus password reaches the command line.
func assertNoCredential(t *testing.T, cmd Command) {
	t.Helper()
	for _, a := range append([]string{cmd.Path}, cmd.Args...) {
		if strings.Contains(a, cpPassword) {
			t.Errorf("an argument carries the password: %q", a)
		}
	}
	for p, data := range cmd.Files {
		if strings.Contains(string(data), cpPassword) {
			t.Errorf("generated file %s copies the password", p)
		}
	}
}
