package devstack

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckCA(t *testing.T) {
	now := time.Now()
	caCert, caKey, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	leafCert, leafKey, err := issueServing(caCert, caKey, now)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cert, key []byte
		at        time.Time
		wantErr   string
	}{
		{"fresh CA", caCert, caKey, now, ""},
		{"missing", nil, nil, now, "failed to find"},
		{"key of another CA", caCert, otherKey, now, "does not match"},
		{"leaf certificate", leafCert, leafKey, now, "not a CA"},
		{"within a year of its end", caCert, caKey, now.Add(caValidity - caRenewBefore + time.Hour), "expires"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCA(tt.cert, tt.key, tt.at)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkCA = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkCA = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckServing(t *testing.T) {
	now := time.Now()
	caCert, caKey, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, otherCAKey, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := issueServing(caCert, caKey, now)
	if err != nil {
		t.Fatal(err)
	}
	foreignCrt, foreignKey, err := issueServing(otherCA, otherCAKey, now)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		ca        []byte
		crt, key  []byte
		at        time.Time
		wantError bool
	}{
		{"issued by the CA", caCert, crt, key, now, false},
		{"missing files", caCert, nil, nil, now, true},
		{"key of another certificate", caCert, crt, foreignKey, now, true},
		{"signed by another CA", caCert, foreignCrt, foreignKey, now, true},
		{"no CA to verify against", nil, crt, key, now, true},
		{"inside the renewal window", caCert, crt, key, now.Add(servingValidity - servingRenewBy + time.Hour), true},
		{"expired", caCert, crt, key, now.Add(servingValidity + time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkServing(tt.ca, tt.crt, tt.key, tt.at)
			if (err != nil) != tt.wantError {
				t.Fatalf("checkServing = %v, want error: %v", err, tt.wantError)
			}
		})
	}
}

func TestEnsurePKIKeepsWhatIsValid(t *testing.T) {
	s := &Stack{dir: t.TempDir()}
	first, err := s.ensurePKI(context.Background(), &state{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first, "(created)") || !strings.Contains(first, "(issued)") {
		t.Errorf("first run = %q, want a created CA and an issued certificate", first)
	}
	files := []string{s.caCertPath(), s.caKeyPath(), filepath.Join(s.webhookCertDir(), "tls.crt"), filepath.Join(s.webhookCertDir(), "tls.key")}
	before := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		before[f] = raw
	}
	for _, key := range []string{s.caKeyPath(), filepath.Join(s.webhookCertDir(), "tls.key")} {
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", key, fi.Mode().Perm())
		}
	}

	second, err := s.ensurePKI(context.Background(), &state{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(second, "(kept)") != 2 {
		t.Errorf("second run = %q, want both kept", second)
	}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if !bytes.Equal(raw, before[f]) {
			t.Errorf("%s changed on a second run", f)
		}
	}

	// A broken serving key is replaced; the CA stays, so the caBundle the
	// apiserver holds stays right.
	if err := os.WriteFile(filepath.Join(s.webhookCertDir(), "tls.key"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	third, err := s.ensurePKI(context.Background(), &state{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(third, "(kept), webhook") || !strings.Contains(third, "(issued)") {
		t.Errorf("third run = %q, want the CA kept and a new certificate", third)
	}
	if raw, _ := os.ReadFile(s.caCertPath()); !bytes.Equal(raw, before[s.caCertPath()]) {
		t.Error("the CA changed when only the serving key was broken")
	}
}
