package novadb

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseFailedBuilds(t *testing.T) {
	tests := []struct {
		name    string
		stats   string
		want    int32
		wantErr bool
	}{
		{name: "empty column", stats: "", want: 0},
		{name: "no key", stats: `{"num_instances": "2"}`, want: 0},
		{name: "string value as Nova writes it", stats: `{"failed_builds": "3", "num_instances": "1"}`, want: 3},
		{name: "zero after a success", stats: `{"failed_builds": "0"}`, want: 0},
		{name: "bare number", stats: `{"failed_builds": 7}`, want: 7},
		{name: "padded string", stats: `{"failed_builds": " 4 "}`, want: 4},
		{name: "negative", stats: `{"failed_builds": "-1"}`, wantErr: true},
		{name: "not a number", stats: `{"failed_builds": "many"}`, wantErr: true},
		{name: "past int32", stats: `{"failed_builds": "4294967296"}`, wantErr: true},
		{name: "not JSON", stats: `failed_builds=3`, wantErr: true},
		{name: "JSON array", stats: `["failed_builds"]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFailedBuilds(tt.stats)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAddSaturating(t *testing.T) {
	const maxInt32 = int32(math.MaxInt32)
	tests := []struct{ a, b, want int32 }{
		{1, 2, 3},
		{maxInt32, 1, maxInt32},
		{maxInt32 - 1, 1, maxInt32},
	}
	for _, tt := range tests {
		if got := addSaturating(tt.a, tt.b); got != tt.want {
			t.Errorf("addSaturating(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestScrubHidesPassword(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		password string
		wantIs   error
	}{
		{name: "password in the text", err: errors.New("access denied for s3cr3t"), password: "s3cr3t"},
		{name: "deadline is kept for errors.Is", err: context.DeadlineExceeded, password: "pw", wantIs: context.DeadlineExceeded},
		{name: "cancel is kept for errors.Is", err: context.Canceled, password: "pw", wantIs: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scrub("op", tt.err, tt.password)
			if strings.Contains(got.Error(), tt.password) {
				t.Errorf("%q carries the password", got)
			}
			if !strings.HasPrefix(got.Error(), "op: ") {
				t.Errorf("%q does not name the operation", got)
			}
			if tt.wantIs != nil && !errors.Is(got, tt.wantIs) {
				t.Errorf("%v is not %v", got, tt.wantIs)
			}
		})
	}
}

func TestOpenRefusesIncompleteConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "no host", cfg: Config{Database: "nova", Username: "nova", Password: "pw"}},
		{name: "no database", cfg: Config{Host: "db", Username: "nova", Password: "pw"}},
		{name: "no user", cfg: Config{Host: "db", Database: "nova", Password: "pw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Open(tt.cfg); err == nil {
				t.Fatal("Open accepted an incomplete configuration")
			}
		})
	}
	db, err := Open(Config{Host: "127.0.0.1", Port: 1, Database: "nova", Username: "nova", Password: "pw"})
	if err != nil {
		t.Fatalf("Open of a complete configuration: %v", err)
	}
	// Open dials nothing; the first query would.
	_ = db.Close()
}

// An unreachable database fails the read quickly, with an error that names
// the operation and never the password.
func TestUnreachableDatabase(t *testing.T) {
	const password = "hunter2-cell-password"
	db, err := Open(Config{Host: "127.0.0.1", Port: 1, Database: "nova", Username: "nova", Password: password, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, _, err = db.FailedBuilds(t.Context())
	var dbErr *Error
	if !errors.As(err, &dbErr) || strings.Contains(err.Error(), password) {
		t.Fatalf("FailedBuilds on a closed port = %v, want a scrubbed *Error", err)
	}
	if _, err := db.ComputeServices(t.Context()); err == nil || strings.Contains(err.Error(), password) {
		t.Fatalf("ComputeServices on a closed port = %v, want a scrubbed error", err)
	}
}
