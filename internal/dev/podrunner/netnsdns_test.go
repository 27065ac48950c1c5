package podrunner

import (
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func TestParseHostAlias(t *testing.T) {
	for _, tc := range []struct {
		in, name, addr string
		ok             bool
	}{
		{in: "nova-metadata.127-0-0-1.nip.io=127.0.0.1", name: "nova-metadata.127-0-0-1.nip.io", addr: "127.0.0.1", ok: true},
		{in: "Upper.Example.=::1", name: "upper.example", addr: "::1", ok: true},
		{in: "no-address", ok: false},
		{in: "=127.0.0.1", ok: false},
		{in: "name=not-an-ip", ok: false},
		{in: "name=fe80::1%eth0", ok: false},
		{in: "has space=127.0.0.1", ok: false},
		{in: "host:80=127.0.0.1", ok: false},
	} {
		name, ip, err := ParseHostAlias(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseHostAlias(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && (name != tc.name || ip.String() != tc.addr) {
			t.Errorf("ParseHostAlias(%q) = %q, %v; want %q, %s", tc.in, name, ip, tc.name, tc.addr)
		}
	}
}

func TestResolvConfNameservers(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       []string
	}{
		{name: "one", conf: "nameserver 10.255.255.53\n", want: []string{"10.255.255.53"}},
		{name: "none means localhost", conf: "search example.org\n", want: []string{"127.0.0.1"}},
		{name: "at most three, comments and scoped ones skipped",
			conf: "# nameserver 9.9.9.9\nnameserver fe80::1%eth0\nnameserver 10.0.0.1\nnameserver ::1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n",
			want: []string{"10.0.0.1", "::1", "10.0.0.2"}},
		{name: "garbage", conf: "nameserver\nnameserver nope\n", want: []string{"127.0.0.1"}},
	} {
		var got []string
		for _, ip := range resolvConfNameservers([]byte(tc.conf)) {
			got = append(got, ip.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: nameservers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// dnsQuery builds a query for name and type.
func dnsQuery(t *testing.T, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 4242, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAnswerDNS(t *testing.T) {
	aliases := HostAliases{
		"nova-metadata.127-0-0-1.nip.io": netip.MustParseAddr("127.0.0.1"),
		"six.test":                       netip.MustParseAddr("::1"),
	}
	for _, tc := range []struct {
		name  string
		query string
		typ   dnsmessage.Type
		rcode dnsmessage.RCode
		want  []string
	}{
		{name: "an alias's A", query: "nova-metadata.127-0-0-1.nip.io.", typ: dnsmessage.TypeA, want: []string{"127.0.0.1"}},
		{name: "case does not matter", query: "NOVA-metadata.127-0-0-1.NIP.io.", typ: dnsmessage.TypeA, want: []string{"127.0.0.1"}},
		{name: "an IPv4 alias has no AAAA", query: "nova-metadata.127-0-0-1.nip.io.", typ: dnsmessage.TypeAAAA},
		{name: "an IPv6 alias's AAAA", query: "six.test.", typ: dnsmessage.TypeAAAA, want: []string{"::1"}},
		{name: "other types are empty", query: "six.test.", typ: dnsmessage.TypeMX},
		{name: "any other name does not exist", query: "example.org.", typ: dnsmessage.TypeA, rcode: dnsmessage.RCodeNameError},
	} {
		reply, err := answerDNS(dnsQuery(t, tc.query, tc.typ), aliases)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var p dnsmessage.Parser
		h, err := p.Start(reply)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if h.ID != 4242 || !h.Response || h.RCode != tc.rcode {
			t.Errorf("%s: header %+v, want the query's ID, a response, rcode %v", tc.name, h, tc.rcode)
		}
		q, err := p.Question()
		if err != nil || q.Name.String() != tc.query {
			t.Errorf("%s: the question is not echoed: %v %v", tc.name, q, err)
		}
		if err := p.SkipAllQuestions(); err != nil {
			t.Fatal(err)
		}
		answers, err := p.AllAnswers()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range answers {
			switch r := a.Body.(type) {
			case *dnsmessage.AResource:
				got = append(got, netip.AddrFrom4(r.A).String())
			case *dnsmessage.AAAAResource:
				got = append(got, netip.AddrFrom16(r.AAAA).String())
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: answers %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := answerDNS([]byte{1, 2, 3}, aliases); err == nil {
		t.Error("a short message is answered")
	}
}
