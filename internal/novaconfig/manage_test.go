package novaconfig

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testDBPassword is distinctive, so a test can tell whether it leaked.
const testDBPassword = "db-pw-5e1b"

func manageInput() ManageInput {
	return ManageInput{
		APIDatabase: Database{Host: "mariadb.openstack.svc", Port: 3306, Database: "nova_api", Username: "nova", Password: testDBPassword},
		Database:    Database{Host: "mariadb.openstack.svc", Port: 3306, Database: "nova", Username: "nova", Password: testDBPassword},
	}
}

func TestRenderManageConfig(t *testing.T) {
	got, err := RenderManageConfig(manageInput())
	if err != nil {
		t.Fatal(err)
	}
	const want = "[api_database]\n" +
		"connection = mysql+pymysql://nova:" + testDBPassword + "@mariadb.openstack.svc:3306/nova_api?charset=utf8mb4\n" +
		"\n" +
		"[database]\n" +
		"connection = mysql+pymysql://nova:" + testDBPassword + "@mariadb.openstack.svc:3306/nova?charset=utf8mb4\n"
	if string(got) != want {
		t.Errorf("nova-manage.conf =\n%s\nwant\n%s", got, want)
	}
}

// Every credential comes back unchanged from the URL, however it has to be
// escaped, and the URL keeps the characters oslo.config or the INI reader
// would act on out of the file.
func TestRenderManageConfigEscapesCredentials(t *testing.T) {
	tests := []struct {
		name, user, password, host string
	}{
		{name: "plain", user: "nova", password: "secret", host: "127.0.0.1"},
		{name: "URL delimiters", user: "nova", password: "p@ss:w/rd%41?#[]", host: "db.example.com"},
		{name: "user with delimiters", user: "no@va:x/y", password: "pw", host: "db.example.com"},
		{name: "oslo.config interpolation", user: "nova", password: "$HOME${x}$$", host: "db.example.com"},
		{name: "spaces, plus and non-ASCII", user: "nova", password: " a+b = grüße ", host: "db.example.com"},
		{name: "INI comment characters", user: "nova", password: "#x;y", host: "db.example.com"},
		{name: "IPv6 host", user: "nova", password: "pw", host: "fd00::10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := manageInput()
			for _, db := range []*Database{&in.APIDatabase, &in.Database} {
				db.Username, db.Password, db.Host, db.Port = tt.user, tt.password, tt.host, 13306
			}
			out, err := RenderManageConfig(in)
			if err != nil {
				t.Fatal(err)
			}
			conf := parseINI(t, out)
			for section, schema := range map[string]string{"api_database": "nova_api", "database": "nova"} {
				raw := conf[section]["connection"]
				if strings.Contains(raw, "$") {
					t.Errorf("[%s] connection carries a '$' oslo.config would substitute", section)
				}
				u, err := url.Parse(raw)
				if err != nil {
					t.Fatalf("[%s] connection does not parse: %v", section, err)
				}
				pw, ok := u.User.Password()
				if u.Scheme != "mysql+pymysql" || u.User.Username() != tt.user || !ok || pw != tt.password {
					t.Errorf("[%s] credentials do not round-trip (scheme %q, user kept %v, password kept %v)",
						section, u.Scheme, u.User.Username() == tt.user, pw == tt.password)
				}
				if u.Hostname() != tt.host || u.Port() != "13306" || u.Path != "/"+schema || u.RawQuery != "charset=utf8mb4" {
					t.Errorf("[%s] host %q port %q path %q query %q", section, u.Hostname(), u.Port(), u.Path, u.RawQuery)
				}
			}
		})
	}
}

// Inputs that cannot be rendered are refused with a message naming the
// field or the section, never a credential.
func TestRenderManageConfigRefuses(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ManageInput)
		want   string
		unsafe bool
	}{
		{name: "newline in the API password", mutate: func(in *ManageInput) { in.APIDatabase.Password = testDBPassword + "\n[DEFAULT]\ndebug = true" },
			want: "section [api_database] contains a control character", unsafe: true},
		{name: "carriage return in the cell password", mutate: func(in *ManageInput) { in.Database.Password = testDBPassword + "\r" },
			want: "section [database] contains a control character", unsafe: true},
		{name: "NUL in the user", mutate: func(in *ManageInput) { in.Database.Username = "nova\x00" + testDBPassword },
			want: "section [database] contains a control character", unsafe: true},
		{name: "NEL in the host", mutate: func(in *ManageInput) { in.APIDatabase.Host = "db\u0085" + testDBPassword },
			want: "section [api_database] contains a control character", unsafe: true},
		{name: "both bad reports the first by name", mutate: func(in *ManageInput) {
			in.APIDatabase.Password, in.Database.Password = "a\n"+testDBPassword, "b\n"+testDBPassword
		}, want: "section [api_database] contains a control character", unsafe: true},
		{name: "empty password", mutate: func(in *ManageInput) { in.Database.Password = "" },
			want: "manage config input ManageInput.Database.Password is empty"},
		{name: "empty host", mutate: func(in *ManageInput) { in.APIDatabase.Host = "" },
			want: "manage config input ManageInput.APIDatabase.Host is empty"},
		{name: "no port", mutate: func(in *ManageInput) { in.APIDatabase.Port = 0 },
			want: "manage config input ManageInput.APIDatabase.Port is 0, not in 1-65535"},
		{name: "port out of range", mutate: func(in *ManageInput) { in.Database.Port = 70000 },
			want: "manage config input ManageInput.Database.Port is 70000, not in 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := manageInput()
			tt.mutate(&in)
			out, err := RenderManageConfig(in)
			if err == nil {
				t.Fatalf("rendered %d bytes, want an error", len(out))
			}
			if out != nil {
				t.Error("an error returned data")
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testDBPassword) {
				t.Error("the error carries the password")
			}
			if IsUnsafeValue(err) != tt.unsafe {
				t.Errorf("IsUnsafeValue = %v, want %v", !tt.unsafe, tt.unsafe)
			}
		})
	}
}

// hostPython is Debian's interpreter, which has python3-nova's oslo.config,
// oslo.db and SQLAlchemy; the one on PATH may be a virtualenv without them.
const hostPython = "/usr/bin/python3"

// readBackScript loads the file the way nova-manage does, with oslo.db's
// options in both groups, and parses each connection with SQLAlchemy.
const readBackScript = `
import json, sys
from oslo_config import cfg
from oslo_db import options
from sqlalchemy.engine import url
conf = cfg.ConfigOpts()
for group in ("api_database", "database"):
    conf.register_opts(options.database_opts, group=group)
conf(["--config-file", sys.argv[1]], project="nova")
out = {}
for group in ("api_database", "database"):
    u = url.make_url(getattr(conf, group).connection)
    out[group] = {"driver": u.drivername, "username": u.username, "password": u.password,
                  "host": u.host, "port": u.port, "database": u.database, "charset": u.query.get("charset")}
json.dump(out, sys.stdout)
`

// nova-manage, not net/url, is the reader that counts: oslo.config must
// not substitute anything and SQLAlchemy must unquote every credential.
func TestIntegrationManageConfigReadByOsloDB(t *testing.T) {
	if err := exec.Command(hostPython, "-c", "import oslo_config, oslo_db, sqlalchemy").Run(); err != nil {
		t.Skipf("%s lacks oslo.config, oslo.db or SQLAlchemy (apt-get install python3-nova): %v", hostPython, err)
	}
	const password = "p@ss:w/rd%41 $HOME${x}$$ +#;[]grüße"
	in := manageInput()
	in.APIDatabase.Password, in.Database.Password = password, password
	in.Database.Username = "cell:user@x"
	in.Database.Host, in.Database.Port = "fd00::10", 13306
	data, err := RenderManageConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), KeyManageConfig)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := exec.Command(hostPython, "-c", readBackScript, path).Output()
	if err != nil {
		// The interpreter's output could quote the file; report only that
		// it failed.
		t.Fatalf("oslo.config and SQLAlchemy could not read nova-manage.conf: %v", err)
	}
	type dbURL struct {
		Driver, Username, Password, Host, Database, Charset string
		Port                                                int
	}
	var got map[string]dbURL
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]dbURL{
		"api_database": {Driver: "mysql+pymysql", Username: "nova", Password: password, Host: "mariadb.openstack.svc", Port: 3306, Database: "nova_api", Charset: "utf8mb4"},
		"database":     {Driver: "mysql+pymysql", Username: "cell:user@x", Password: password, Host: "fd00::10", Port: 13306, Database: "nova", Charset: "utf8mb4"},
	}
	for group, w := range want {
		g := got[group]
		if g.Password != w.Password {
			t.Errorf("[%s] the password does not survive oslo.config and SQLAlchemy", group)
		}
		g.Password, w.Password = "", ""
		if g != w {
			t.Errorf("[%s] read back as %+v, want %+v", group, g, w)
		}
	}
}
