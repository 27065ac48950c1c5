package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// OperatorUserAgent is the user agent of every API client of the operator
// under test: the manager's, which NewManager sets, and the compute
// clusters', which the target cluster registry sets to the same string.
// Every client of a test binary otherwise shares one default user agent,
// so this is what tells the operator's requests from the test's own in an
// audit log; the workload processes and the pod runner each send their own.
const OperatorUserAgent = "anvil-operator"

// auditPolicy records every write request once, when its response is
// complete, at Metadata level: who, which verb, which object, which status,
// and never a request or response body. Reads are not recorded.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// auditAllPolicy records every request, reads included, the same way; it
// is for measuring how much an idle operator asks of an apiserver.
const auditAllPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// writeVerbs are the verbs that change what the apiserver stores.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// enableAudit makes the apiserver log every write request, and every read
// too when reads is set, to a JSON file in dir and returns the file's path. The log is written in blocking mode, so
// a request's event is in the file before its response is sent, and never
// rotated, so an offset into it stays valid across a restart.
func enableAudit(s *envtest.APIServer, dir string, reads bool) (string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	text := auditPolicy
	if reads {
		text = auditAllPolicy
	}
	if err := os.WriteFile(policy, []byte(text), 0o600); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "audit.log")
	args := s.Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", path)
	args.Set("audit-log-format", "json")
	args.Set("audit-log-mode", "blocking")
	args.Set("audit-log-maxsize", "0")
	return path, nil
}

// AuditEvent is one audited request, a write unless the environment
// audits reads too: who sent it and what it touched. It holds no request or response body.
type AuditEvent struct {
	// Time is when the apiserver completed the request.
	Time time.Time
	// Verb is the request's verb: create, update, patch, delete or
	// deletecollection for a write; get, list or watch for a read.
	Verb string
	// User is the authenticated user name.
	User string
	// UserAgent is the client's user agent.
	UserAgent string
	// Group, Resource, Subresource, Namespace and Name identify the object.
	Group, Resource, Subresource, Namespace, Name string
	// Code is the response's HTTP status code.
	Code int32
}

// ByOperator tells whether the operator under test sent the request.
func (e AuditEvent) ByOperator() bool {
	return e.UserAgent == OperatorUserAgent
}

// String renders the event for a failure message: verb, resource,
// namespace/name, subresource, status and sender.
func (e AuditEvent) String() string {
	resource := e.Resource
	if e.Group != "" {
		resource += "." + e.Group
	}
	if e.Subresource != "" {
		resource += "/" + e.Subresource
	}
	name := e.Name
	if e.Namespace != "" {
		name = e.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s %s -> %d at %s by %s (%s)", e.Verb, resource, name, e.Code,
		e.Time.Format("15:04:05.000"), e.User, e.UserAgent)
}

// auditLine is the part of an audit.k8s.io/v1 Event that AuditEvent keeps.
type auditLine struct {
	Stage          string `json:"stage"`
	Verb           string `json:"verb"`
	UserAgent      string `json:"userAgent"`
	StageTimestamp string `json:"stageTimestamp"`
	User           struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int32 `json:"code"`
	} `json:"responseStatus"`
}

// errNoAudit is returned by the audit readers of a cluster started without
// Options.Audit.
var errNoAudit = errors.New("the environment was started without Options.Audit")

// AuditMark returns the end of the cluster's audit log, for AuditWrites to
// read what was written after it.
func (c *Cluster) AuditMark() (int64, error) {
	if c.auditLog == "" {
		return 0, errNoAudit
	}
	info, err := os.Stat(c.auditLog)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// AuditWrites returns the write requests the cluster's apiserver completed
// after mark (0 reads from the beginning), in order, and the mark to read
// on from. A line the apiserver is still writing is left for the next read.
func (c *Cluster) AuditWrites(mark int64) ([]AuditEvent, int64, error) {
	return c.readAudit(mark, IsWriteVerb)
}

// AuditRequests returns every request the audit log records after mark,
// reads included when the environment was started with
// Options.AuditReads, and the mark to read on from. A watch is recorded
// when it ends.
func (c *Cluster) AuditRequests(mark int64) ([]AuditEvent, int64, error) {
	return c.readAudit(mark, func(string) bool { return true })
}

// IsWriteVerb tells whether an audited verb changes what the apiserver
// stores.
func IsWriteVerb(verb string) bool { return slices.Contains(writeVerbs, verb) }

func (c *Cluster) readAudit(mark int64, keep func(verb string) bool) ([]AuditEvent, int64, error) {
	if c.auditLog == "" {
		return nil, mark, errNoAudit
	}
	f, err := os.Open(c.auditLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, mark, nil
	}
	if err != nil {
		return nil, mark, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(mark, io.SeekStart); err != nil {
		return nil, mark, err
	}
	events, n, err := parseAudit(bufio.NewReaderSize(f, 64<<10), keep)
	return events, mark + n, err
}

// parseAudit reads complete JSON lines of audit events from r and returns
// the completed requests whose verb keep passes and how many bytes the
// complete lines took.
func parseAudit(r *bufio.Reader, keep func(verb string) bool) ([]AuditEvent, int64, error) {
	var out []AuditEvent
	var consumed int64
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// An incomplete last line is still being written.
			return out, consumed, nil
		}
		if err != nil {
			return out, consumed, err
		}
		consumed += int64(len(line))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var l auditLine
		if err := json.Unmarshal(line, &l); err != nil {
			return out, consumed, fmt.Errorf("an audit line at byte %d: %w", consumed-int64(len(line)), err)
		}
		// The policy omits RequestReceived; a long-running request, a
		// watch, also reports ResponseStarted, and counts once, when it
		// completes.
		if l.Stage == "RequestReceived" || l.Stage == "ResponseStarted" || !keep(l.Verb) {
			continue
		}
		e := AuditEvent{Verb: l.Verb, User: l.User.Username, UserAgent: l.UserAgent}
		if t, err := time.Parse(time.RFC3339Nano, l.StageTimestamp); err == nil {
			e.Time = t
		}
		if o := l.ObjectRef; o != nil {
			e.Group, e.Resource, e.Subresource, e.Namespace, e.Name = o.APIGroup, o.Resource, o.Subresource, o.Namespace, o.Name
		}
		if l.ResponseStatus != nil {
			e.Code = l.ResponseStatus.Code
		}
		out = append(out, e)
	}
}

// OperatorWrites keeps the events the operator under test sent.
func OperatorWrites(events []AuditEvent) []AuditEvent {
	var out []AuditEvent
	for _, e := range events {
		if e.ByOperator() {
			out = append(out, e)
		}
	}
	return out
}

// FormatAuditEvents renders events one per line, for a failure message.
func FormatAuditEvents(events []AuditEvent) string {
	lines := make([]string, 0, len(events))
	for _, e := range events {
		lines = append(lines, "  "+e.String())
	}
	return strings.Join(lines, "\n")
}

// RepeatedWrites groups the writes the operator under test stored (status
// below 300) to objects, not their subresources, that keep accepts, by
// resource and name, and returns the groups of more than most writes. A
// test that changes an object and changes it back expects each child to
// be stored at most once each way.
func RepeatedWrites(events []AuditEvent, most int, keep func(AuditEvent) bool) map[string][]AuditEvent {
	byObject := map[string][]AuditEvent{}
	for _, e := range OperatorWrites(events) {
		if e.Subresource != "" || e.Code >= 300 || !keep(e) {
			continue
		}
		key := e.Resource + " " + e.Namespace + "/" + e.Name
		byObject[key] = append(byObject[key], e)
	}
	for key, writes := range byObject {
		if len(writes) <= most {
			delete(byObject, key)
		}
	}
	return byObject
}
