package ovntest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestWriteIdentity(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"tls.key": []byte("k"), "tls.crt": []byte("c"), "ca.crt": []byte("a"), "extra": []byte("x")}}
	opts := WriteIdentity(t, s)
	want := []struct{ option, content string }{{"--private-key=", "k"}, {"--certificate=", "c"}, {"--ca-cert=", "a"}}
	if len(opts) != len(want) {
		t.Fatalf("options %v, want %d", opts, len(want))
	}
	for i, w := range want {
		path, ok := strings.CutPrefix(opts[i], w.option)
		if !ok {
			t.Errorf("option %d = %q, want %s...", i, opts[i], w.option)
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != w.content {
			t.Errorf("%s holds %q, %v; want %q", path, got, err, w.content)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", path, fi.Mode().Perm(), err)
		}
	}
}

func TestOVS(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		out     string
		wantErr bool
	}{
		{name: "output of a program that succeeds", args: []string{"-c", "echo hello"}, out: "hello\n"},
		{name: "output and error of one that fails", args: []string{"-c", "echo refused; exit 3"}, out: "refused\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := OVS(t, "sh", tt.args...)
			if out != tt.out || (err != nil) != tt.wantErr {
				t.Errorf("OVS = %q, %v; want %q, error %v", out, err, tt.out, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "refused") {
				t.Errorf("the error %q does not carry the output", err)
			}
		})
	}
}

// recorder is a test that records a failure instead of ending.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	tests := []struct {
		name     string
		passAt   int
		timeout  time.Duration
		wantFail bool
	}{
		{name: "passes at once", passAt: 1, timeout: time.Second},
		{name: "passes on a later try", passAt: 3, timeout: 5 * time.Second},
		{name: "never passes within the timeout", passAt: 100, timeout: time.Second, wantFail: true},
		{name: "checks once even without time", passAt: 1, timeout: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			tries := 0
			Eventually(r, tt.timeout, "the check", func() error {
				if tries++; tries >= tt.passAt {
					return nil
				}
				return errors.New("not yet")
			})
			if got := r.failed != ""; got != tt.wantFail {
				t.Errorf("failed = %q after %d tries, want failure %v", r.failed, tries, tt.wantFail)
			}
			if tt.wantFail && r.failed != "the check: not yet" {
				t.Errorf("failure %q does not name the check and its last error", r.failed)
			}
		})
	}
}
