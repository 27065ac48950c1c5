package brokeradmin

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	good := func() map[string][]byte {
		return map[string][]byte{KeyURL: []byte("https://bus.example.com:15671"), KeyUsername: []byte("admin"), KeyPassword: []byte("admin-PASSWORD")}
	}
	cases := []struct {
		name   string
		change func(map[string][]byte)
		err    string
	}{
		{name: "complete", change: func(map[string][]byte) {}},
		{name: "no url", change: func(d map[string][]byte) { delete(d, KeyURL) }, err: "key url is missing"},
		{name: "empty username", change: func(d map[string][]byte) { d[KeyUsername] = nil }, err: "key username is missing"},
		{name: "no password", change: func(d map[string][]byte) { delete(d, KeyPassword) }, err: "key password is missing"},
		{name: "plain http", change: func(d map[string][]byte) { d[KeyURL] = []byte("http://bus:15672") }, err: "not an https:// URL"},
		{name: "credentials in the url", change: func(d map[string][]byte) { d[KeyURL] = []byte("https://admin:admin-PASSWORD@bus") }, err: "without credentials"},
		{name: "no host", change: func(d map[string][]byte) { d[KeyURL] = []byte("https:///api") }, err: "not an https:// URL"},
		{name: "a CA that is not PEM", change: func(d map[string][]byte) { d[KeyCA] = []byte("not a certificate") }, err: "key ca.crt holds no PEM"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := good()
			c.change(data)
			_, err := New(data)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
			if strings.Contains(err.Error(), "PASSWORD") {
				t.Fatalf("the error quotes a password: %v", err)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	cases := []struct {
		base     string
		segments []string
		want     string
	}{
		{base: "https://bus:15671", segments: []string{"users", "nova-compute-a"}, want: "https://bus:15671/api/users/nova-compute-a"},
		{base: "https://bus:15671/", segments: []string{"permissions", "/", "u"}, want: "https://bus:15671/api/permissions/%2F/u"},
		{base: "https://lb.example.com/rabbitmq", segments: []string{"permissions", "open stack", "u"}, want: "https://lb.example.com/rabbitmq/api/permissions/open%20stack/u"},
	}
	for _, c := range cases {
		cl, err := New(map[string][]byte{KeyURL: []byte(c.base), KeyUsername: []byte("a"), KeyPassword: []byte("p")})
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.endpoint(c.segments...); got != c.want {
			t.Errorf("endpoint(%q) on %s = %s, want %s", c.segments, c.base, got, c.want)
		}
	}
}

func TestParseTags(t *testing.T) {
	cases := []struct {
		raw  string
		want []string
	}{
		{raw: `["administrator","anvil-controlplane:ns/cp"]`, want: []string{"administrator", "anvil-controlplane:ns/cp"}},
		{raw: `"administrator,monitoring"`, want: []string{"administrator", "monitoring"}},
		{raw: `""`},
		{raw: `[]`, want: []string{}},
		{raw: `null`},
	}
	for _, c := range cases {
		if got := parseTags(json.RawMessage(c.raw)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseTags(%s) = %#v, want %#v", c.raw, got, c.want)
		}
	}
}
