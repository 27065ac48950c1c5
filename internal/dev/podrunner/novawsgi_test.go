package podrunner

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNovaWSGICommands checks the uwsgi command lines of nova-api and
// nova-metadata: the container's options kept, the socket on the loopback
// address at the container's port, the local WSGI script, and the
// configuration variables translated, with the paste pipeline first and the
// overrides last.
func TestNovaWSGICommands(t *testing.T) {
	commonOpts := []string{"--master", "--die-on-term", "--need-app", "--lazy-apps", "--enable-threads", "--processes", "2", "--threads", "1"}
	tests := []struct {
		name    string
		mapping Mapping
		spec    corev1.Container
		want    []string // uwsgi options between the plugin and what the mapping adds
		addsDie bool     // whether the mapping adds --die-on-term
	}{
		{
			name:    "nova-api",
			mapping: NovaAPIMapping(),
			spec:    cpWSGIContainer("nova-api", "8774", "/usr/bin/nova-api-wsgi"),
			want:    append([]string{"--http-socket", "127.0.0.1:8774", "--wsgi-file", NovaAPIWSGIPath}, commonOpts...),
		},
		{
			name:    "nova-metadata",
			mapping: NovaMetadataMapping(),
			spec:    cpWSGIContainer("nova-metadata", "8775", "/usr/bin/nova-metadata-wsgi"),
			want:    append([]string{"--http-socket", "127.0.0.1:8775", "--wsgi-file", NovaMetadataWSGIPath}, commonOpts...),
		},
		{
			name:    "inline values, image-only options dropped, die-on-term added",
			mapping: NovaAPIMapping(),
			spec: func() corev1.Container {
				c := cpWSGIContainer("nova-api", "8774", "")
				c.Command = []string{"/bin/sh", "-c", "exec uwsgi --plugin python3 --uid nova --gid=nova --reuse-port " +
					"--http-socket=0.0.0.0:18774 --wsgi-file=/var/lib/openstack/bin/nova-api-wsgi --procname-prefix-spaced x " +
					"--logto " + cpConfigDir + "/x.log"}
				return c
			}(),
			want:    []string{"--http-socket", "127.0.0.1:18774", "--wsgi-file", NovaAPIWSGIPath, "--logto", "<secret>/x.log"},
			addsDie: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cpFixture(t, tt.spec, cpNovaConf)
			cmd, err := tt.mapping.Build(c)
			if err != nil {
				t.Fatal(err)
			}
			secretDir := c.Mounts[0].HostPath
			overrides := filepath.Join(c.WorkDir, OverridesFile)
			var want []string
			want = append(want, "--plugin", "python3")
			for _, o := range tt.want {
				want = append(want, strings.ReplaceAll(o, "<secret>", secretDir))
			}
			want = append(want, "--reuse-port")
			if tt.addsDie {
				want = append(want, "--die-on-term")
			}
			want = append(want, "--procname-prefix-spaced", "openstack/"+cpPod)
			want = append(want,
				"--env", novaConfigDirEnv+"="+secretDir,
				"--env", novaConfigFilesEnv+"="+DefaultAPIPasteConfig+";"+filepath.Join(secretDir, "nova.conf")+";"+overrides)
			if cmd.Path != UWSGIPath || !reflect.DeepEqual(cmd.Args, want) {
				t.Errorf("argv = %s %q\nwant %s %q", cmd.Path, cmd.Args, UWSGIPath, want)
			}
			conf := string(cmd.Files[overrides])
			if !strings.Contains(conf, "host = "+cpPod+"\n") || strings.Contains(conf, "compute_driver") {
				t.Errorf("overrides:\n%s", conf)
			}
			assertNoCredential(t, cmd)
		})
	}
}

// TestNovaWSGIConfigFiles checks how the configuration variables and the
// paste pipeline are found.
func TestNovaWSGIConfigFiles(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string // replaces the contract's variables
		novaConf string
		want     string // OS_NOVA_CONFIG_FILES, <secret> and <overrides> replaced
		wantDir  string
	}{
		{
			name:     "contract",
			novaConf: cpNovaConf,
			want:     DefaultAPIPasteConfig + ";<secret>/nova.conf;<overrides>",
			wantDir:  "<secret>",
		},
		{
			name:     "paste pipeline in the mount",
			novaConf: "[wsgi]\napi_paste_config = " + cpConfigDir + "/api-paste.ini\n",
			want:     "<secret>/api-paste.ini;<secret>/nova.conf;<overrides>",
			wantDir:  "<secret>",
		},
		{
			name:     "paste pipeline elsewhere on the host",
			novaConf: "[wsgi]\napi_paste_config = /srv/paste.ini\n",
			want:     "/srv/paste.ini;<secret>/nova.conf;<overrides>",
			wantDir:  "<secret>",
		},
		{
			name:     "relative paste pipeline",
			novaConf: "[wsgi]\napi_paste_config = api-paste.ini\n",
			want:     DefaultAPIPasteConfig + ";<secret>/nova.conf;<overrides>",
			wantDir:  "<secret>",
		},
		{
			name:     "nova's defaults: /etc/nova is no mount, the mounted file is found",
			env:      map[string]string{},
			novaConf: cpNovaConf,
			want:     DefaultAPIPasteConfig + ";<secret>/nova.conf;<overrides>",
			wantDir:  "<secret>",
		},
		{
			name:     "absolute names and a name outside the mounts",
			env:      map[string]string{novaConfigDirEnv: "/etc/nova", novaConfigFilesEnv: cpConfigDir + "/nova.conf; api-paste.ini"},
			novaConf: cpNovaConf,
			want:     DefaultAPIPasteConfig + ";<secret>/nova.conf;<overrides>",
			wantDir:  "<secret>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cpFixture(t, cpWSGIContainer("nova-metadata", "8775", "/usr/bin/nova-metadata-wsgi"), tt.novaConf)
			if tt.env != nil {
				c.Env = tt.env
			}
			cmd, err := NovaMetadataMapping().Build(c)
			if err != nil {
				t.Fatal(err)
			}
			r := strings.NewReplacer("<secret>", c.Mounts[0].HostPath, "<overrides>", filepath.Join(c.WorkDir, OverridesFile))
			n := len(cmd.Args)
			want := []string{"--env", novaConfigDirEnv + "=" + r.Replace(tt.wantDir), "--env", novaConfigFilesEnv + "=" + r.Replace(tt.want)}
			if got := cmd.Args[n-4:]; !reflect.DeepEqual(got, want) {
				t.Errorf("env = %q\nwant %q", got, want)
			}
		})
	}
}

// TestNovaWSGIErrors checks the command lines the mapping refuses.
func TestNovaWSGIErrors(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		conf    bool
	}{
		{"no socket", []string{"uwsgi", "--wsgi-file", "/usr/bin/nova-api-wsgi"}, true},
		{"socket without a value", []string{"uwsgi", "--wsgi-file", "/usr/bin/nova-api-wsgi", "--http-socket"}, true},
		{"unreadable address", []string{"uwsgi", "--wsgi-file", "/usr/bin/nova-api-wsgi", "--http-socket", "127.0.0.1:x:y"}, true},
		{"no configuration mounted", []string{"uwsgi", "--wsgi-file", "/usr/bin/nova-api-wsgi", "--http-socket", ":8774"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := cpWSGIContainer("nova-api", "8774", "/usr/bin/nova-api-wsgi")
			spec.Command = tt.command
			c := cpFixture(t, spec, cpNovaConf)
			if !tt.conf {
				c.Mounts = nil
			}
			if _, err := NovaAPIMapping().Build(c); err == nil {
				t.Error("want an error")
			}
		})
	}
}

// TestNovaWSGIKeepsSecretReferences checks that a $(VAR) from a Secret is
// left unexpanded rather than put on uwsgi's command line.
func TestNovaWSGIKeepsSecretReferences(t *testing.T) {
	spec := cpWSGIContainer("nova-api", "8774", "/usr/bin/nova-api-wsgi")
	spec.Command = append(spec.Command, "--env", "TRANSPORT_URL=$(TRANSPORT_URL)")
	c := cpFixture(t, spec, cpNovaConf)
	cmd, err := NovaAPIMapping().Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cmd.Args, " "), "--env TRANSPORT_URL=$(TRANSPORT_URL)") {
		t.Errorf("the reference was expanded or lost: %q", cmd.Args)
	}
	assertNoCredential(t, cmd)
}
