package novaconfig

import (
	"strings"
	"testing"
)

func TestTransportURLFor(t *testing.T) {
	cases := []struct {
		name, raw, user, password string
		want, vhost, err          string
	}{
		{name: "one host, root vhost", raw: "rabbit://nova:secret@bus:5671/", user: "nova-compute-a", password: "pw",
			want: "rabbit://nova-compute-a:pw@bus:5671/", vhost: "/"},
		{name: "no path at all", raw: "rabbit://nova:secret@bus:5671", user: "u", password: "p",
			want: "rabbit://u:p@bus:5671", vhost: "/"},
		{name: "named vhost and a query", raw: "rabbit://nova:secret@bus:5671/openstack?ssl=1", user: "u", password: "p",
			want: "rabbit://u:p@bus:5671/openstack?ssl=1", vhost: "openstack"},
		{name: "escaped vhost", raw: "rabbit://nova:s@bus/%2Fnova", user: "u", password: "p",
			want: "rabbit://u:p@bus/%2Fnova", vhost: "/nova"},
		{name: "every host of a cluster", raw: "rabbit://nova:s@b1:5671,nova:s@b2:5671,b3:5671/", user: "u", password: "p",
			want: "rabbit://u:p@b1:5671,u:p@b2:5671,u:p@b3:5671/", vhost: "/"},
		{name: "a password with @ and : is replaced whole", raw: "rabbit://nova:a@b:c@bus/", user: "u", password: "p",
			want: "rabbit://u:p@bus/", vhost: "/"},
		{name: "the new password is escaped", raw: "rabbit://nova:s@bus/", user: "u", password: "p@ss/$",
			want: "rabbit://u:p%40ss%2F$@bus/", vhost: "/"},
		{name: "not rabbit", raw: "amqp://nova:secret@bus/", user: "u", password: "p", err: "not rabbit"},
		{name: "empty host", raw: "rabbit://nova:secret@b1,/", user: "u", password: "p", err: "empty host"},
		{name: "empty password", raw: "rabbit://bus/", user: "u", err: "empty"},
		{name: "newline in the password", raw: "rabbit://bus/", user: "u", password: "p\nq", err: "control"},
		{name: "bad escape in the vhost", raw: "rabbit://nova:secret@bus/%zz", user: "u", password: "p", err: "vhost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, vhost, err := TransportURLFor(c.raw, c.user, c.password)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the error quotes the URL's password: %v", err)
				}
				return
			}
			if err != nil || got != c.want || vhost != c.vhost {
				t.Fatalf("got %q, vhost %q, %v; want %q, vhost %q", got, vhost, err, c.want, c.vhost)
			}
		})
	}
}

func TestFromEnvLiteralReversesEnvLiteral(t *testing.T) {
	for _, v := range []string{"", "plain", "$", "a$$b", "$$$", "rabbit://u:p$w@h/"} {
		if got := FromEnvLiteral(EnvLiteral(v)); got != v {
			t.Errorf("FromEnvLiteral(EnvLiteral(%q)) = %q", v, got)
		}
	}
}
