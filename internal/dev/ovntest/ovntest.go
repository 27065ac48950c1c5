// Package ovntest holds what the OVN integration suites (the central's and
// the chassis's) share: the OVS command-line options that present a TLS
// identity from a Secret, a run of an OVS or OVN client program, and a
// wait for a check to pass. It is test machinery and never ships.
package ovntest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProgramTimeout ends a client program that did not end on its own. The
// suites pass the programs a --timeout of at most 30 s, so this is only a
// backstop for one that hangs.
const ProgramTimeout = 40 * time.Second

// pollInterval is how often Eventually checks again.
const pollInterval = 500 * time.Millisecond

// identityKeys are the files an identity is written to, one per Secret
// key, and the OVS options that name them, in the order they are passed.
var identityKeys = []struct{ key, option string }{
	{corev1.TLSPrivateKeyKey, "--private-key="},
	{corev1.TLSCertKey, "--certificate="},
	{"ca.crt", "--ca-cert="},
}

// ClientTLS reads the Secret at key through c and returns the OVS
// command-line options that present its identity; see WriteIdentity.
func ClientTLS(t testing.TB, c client.Reader, key client.ObjectKey) []string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), key, s); err != nil {
		t.Fatal(err)
	}
	return WriteIdentity(t, s)
}

// WriteIdentity writes the key, the certificate and the CA of a TLS Secret
// to files only the test's user may read, in a directory the test removes
// when it ends, and returns the OVS options that present them.
func WriteIdentity(t testing.TB, s *corev1.Secret) []string {
	t.Helper()
	dir := t.TempDir()
	opts := make([]string, 0, len(identityKeys))
	for _, k := range identityKeys {
		path := filepath.Join(dir, k.key)
		if err := os.WriteFile(path, s.Data[k.key], 0o600); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, k.option+path)
	}
	return opts
}

// OVS runs an OVS or OVN client program, such as ovsdb-client or
// ovn-nbctl, and returns its combined output. A program that fails, or
// runs longer than ProgramTimeout, returns an error with its arguments and
// output.
func OVS(t testing.TB, program string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ProgramTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, program, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", program, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Eventually runs check until it returns nil, at least once and then until
// timeout has passed, and fails the test with what and check's last error
// when it never does.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		last := check()
		if last == nil {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("%s: %v", what, last)
			return
		}
		time.Sleep(pollInterval)
	}
}
