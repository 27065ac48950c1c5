package testenv

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseAuditKeepsCompleteWriteLines(t *testing.T) {
	lines := strings.Join([]string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"admin"},"userAgent":"anvil-operator",` +
			`"objectRef":{"resource":"novacomputes","namespace":"openstack","name":"idle","apiGroup":"nova.openstack.c5c3.io","apiVersion":"v1alpha1","subresource":"status"},` +
			`"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-01-02T03:04:05.678901Z"}`,
		`{"stage":"ResponseComplete","verb":"get","userAgent":"anvil-operator","objectRef":{"resource":"pods"}}`,
		`{"stage":"RequestReceived","verb":"create","userAgent":"anvil-operator","objectRef":{"resource":"events"}}`,
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"userAgent":"anvil-podrunner","objectRef":{"resource":"events","namespace":"openstack","name":"e1"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseComplete","verb":"delete","userAgent":"anvil-operator",`, // still being written
	}, "\n")
	events, n, err := parseAudit(bufio.NewReader(strings.NewReader(lines)), IsWriteVerb)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(strings.LastIndex(lines, "\n") + 1); n != want {
		t.Errorf("consumed %d bytes, want %d: the incomplete last line is left", n, want)
	}
	if len(events) != 2 {
		t.Fatalf("got %d events, want the patch and the create: %v", len(events), events)
	}
	got := events[0].String()
	if want := "patch novacomputes.nova.openstack.c5c3.io/status openstack/idle -> 200 at 03:04:05.678 by admin (anvil-operator)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if ops := OperatorWrites(events); len(ops) != 1 || ops[0].Verb != "patch" {
		t.Errorf("operator writes = %v, want only the patch", ops)
	}
}

func TestParseAuditKeepsReadsWhenAsked(t *testing.T) {
	lines := `{"stage":"ResponseComplete","verb":"get","userAgent":"anvil-operator","objectRef":{"resource":"pods"}}
{"stage":"ResponseStarted","verb":"watch","userAgent":"anvil-operator","objectRef":{"resource":"nodes"}}
{"stage":"ResponseComplete","verb":"watch","userAgent":"anvil-operator","objectRef":{"resource":"nodes"}}
{"stage":"ResponseComplete","verb":"update","userAgent":"anvil-operator","objectRef":{"resource":"leases"}}
`
	events, _, err := parseAudit(bufio.NewReader(strings.NewReader(lines)), func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, e := range events {
		verbs = append(verbs, e.Verb)
	}
	if got := strings.Join(verbs, ","); got != "get,watch,update" {
		t.Errorf("verbs = %s, want get,watch,update: a watch counts once, when it completes", got)
	}
}

func TestRepeatedWrites(t *testing.T) {
	write := func(name, subresource, agent string, code int32) AuditEvent {
		return AuditEvent{Verb: "patch", Resource: "secrets", Namespace: "ns", Name: name, Subresource: subresource, UserAgent: agent, Code: code}
	}
	events := []AuditEvent{
		write("twice", "", OperatorUserAgent, 200), write("twice", "", OperatorUserAgent, 200),
		write("thrice", "", OperatorUserAgent, 200), write("thrice", "", OperatorUserAgent, 201), write("thrice", "", OperatorUserAgent, 200),
		// Refused writes, status writes and another client's writes do not count.
		write("refused", "", OperatorUserAgent, 409), write("refused", "", OperatorUserAgent, 409), write("refused", "", OperatorUserAgent, 200),
		write("status", "status", OperatorUserAgent, 200), write("status", "status", OperatorUserAgent, 200), write("status", "status", OperatorUserAgent, 200),
		write("test", "", "test-client", 200), write("test", "", "test-client", 200), write("test", "", "test-client", 200),
		write("skipped", "", OperatorUserAgent, 200), write("skipped", "", OperatorUserAgent, 200), write("skipped", "", OperatorUserAgent, 200),
	}
	got := RepeatedWrites(events, 2, func(e AuditEvent) bool { return e.Name != "skipped" })
	if len(got) != 1 || len(got["secrets ns/thrice"]) != 3 {
		t.Errorf("RepeatedWrites = %v, want only secrets ns/thrice with 3 writes", got)
	}
}
