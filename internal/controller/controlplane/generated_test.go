package controlplane_test

import (
	"strings"
	"testing"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/controller/controlplane"
)

func TestGeneratedDigest(t *testing.T) {
	d := controlplane.GeneratedDigest("cp-creds", "s3cret")
	switch {
	case len(d) != 64:
		t.Errorf("digest %q is not hex SHA-256", d)
	case strings.Contains(d, "s3cret"):
		t.Error("the digest carries the value")
	case d == controlplane.GeneratedDigest("other-creds", "s3cret"):
		t.Error("one digest vouches for the value under two names")
	case d != controlplane.GeneratedDigest("cp-creds", "s3cret"):
		t.Error("the digest is not stable")
	}
}

func TestVouches(t *testing.T) {
	entries := controlplane.RecordGenerated(nil, "a", "value-a")
	tests := []struct {
		name, secret, value string
		want                bool
	}{
		{"recorded value", "a", "value-a", true},
		{"another value", "a", "planted", false},
		{"the value under another name", "b", "value-a", false},
		{"empty value", "a", "", false},
		{"nothing recorded for the name", "c", "value-c", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controlplane.Vouches(entries, tt.secret, tt.value); got != tt.want {
				t.Errorf("Vouches(%q, %q) = %v, want %v", tt.secret, tt.value, got, tt.want)
			}
		})
	}
}

func TestRecordAndForgetGenerated(t *testing.T) {
	var entries []c5c3v1alpha1.GeneratedSecret
	entries = controlplane.RecordGenerated(entries, "b", "1")
	entries = controlplane.RecordGenerated(entries, "a", "2")
	entries = controlplane.RecordGenerated(entries, "b", "3")
	if len(entries) != 2 || entries[0].Name != "a" || entries[1].Name != "b" {
		t.Fatalf("entries %v, want a and b in order, one each", entries)
	}
	if !controlplane.Vouches(entries, "b", "3") || controlplane.Vouches(entries, "b", "1") {
		t.Error("a new value of b did not replace the old one")
	}
	kept := entries
	entries = controlplane.ForgetGenerated(entries, "a")
	if len(entries) != 1 || entries[0].Name != "b" {
		t.Errorf("after forgetting a: %v", entries)
	}
	if len(kept) != 2 || kept[0].Name != "a" {
		t.Error("ForgetGenerated changed the slice it was given")
	}
	if again := controlplane.RecordGenerated(entries, "b", "3"); len(again) != 1 || again[0] != entries[0] {
		t.Errorf("recording the same value changed the entries: %v", again)
	}
}
