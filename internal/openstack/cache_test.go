package openstack

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRenewAt(t *testing.T) {
	issued := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		expires time.Time
		want    time.Time
	}{
		{"unknown expiry keeps ten minutes", time.Time{}, issued.Add(10 * time.Minute)},
		{"expiry before issue counts as unknown", issued.Add(-time.Minute), issued.Add(10 * time.Minute)},
		{"an hour's token is renewed a quarter before", issued.Add(time.Hour), issued.Add(45 * time.Minute)},
		{"a day's token is renewed six hours before", issued.Add(24 * time.Hour), issued.Add(18 * time.Hour)},
		{"a ten-minute token keeps the five-minute margin", issued.Add(10 * time.Minute), issued.Add(5 * time.Minute)},
		{"a token shorter than the margin is not reused", issued.Add(3 * time.Minute), issued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RenewAt(issued, tc.expires); !got.Equal(tc.want) {
				t.Fatalf("RenewAt = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestKeyOfSeparatesEveryField(t *testing.T) {
	base := Credentials{AuthURL: "https://k/v3", Username: "nova", Password: "pw", ProjectName: "service",
		UserDomainName: "Default", ProjectDomainName: "Default", Region: "RegionOne", Interface: "internal", CABundle: []byte("ca")}
	variants := map[string]func(c *Credentials){
		"auth URL": func(c *Credentials) { c.AuthURL = "https://other/v3" },
		"user":     func(c *Credentials) { c.Username = "placement" },
		"password": func(c *Credentials) { c.Password = "rotated" },
		"project":  func(c *Credentials) { c.ProjectName = "admin" },
		"region":   func(c *Credentials) { c.Region = "RegionTwo" },
		"CA":       func(c *Credentials) { c.CABundle = []byte("other") },
		// Moving a byte from one field to the next must not collide.
		"boundary": func(c *Credentials) { c.Username, c.Password = "novap", "w" },
	}
	for name, change := range variants {
		c := base
		change(&c)
		if keyOf(false, c) == keyOf(false, base) {
			t.Errorf("changing the %s keeps the cache key", name)
		}
	}
	if keyOf(true, base) == keyOf(false, base) {
		t.Error("an identity session and a full session share a key")
	}
}

func TestSessionCacheReusesUntilRenewal(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	opened := 0
	sc := NewSessionCache()
	sc.now = func() time.Time { return now }
	sc.open = func(_ context.Context, _ bool, c Credentials) (*Session, time.Time, error) {
		if c.Password == "wrong" {
			return nil, time.Time{}, errors.New("refused")
		}
		opened++
		return &Session{}, now.Add(time.Hour), nil
	}
	creds := Credentials{AuthURL: "https://k/v3", Username: "nova", Password: "pw"}
	first, err := sc.Session(t.Context(), creds)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(44 * time.Minute)
	if again, _ := sc.Session(t.Context(), creds); again != first || opened != 1 {
		t.Fatalf("a fresh session was not reused: opened %d", opened)
	}
	rotated := creds
	rotated.Password = "rotated"
	if other, _ := sc.Session(t.Context(), rotated); other == first || opened != 2 {
		t.Fatalf("rotated credentials reused the old session: opened %d", opened)
	}
	now = now.Add(2 * time.Minute)
	if renewed, _ := sc.Session(t.Context(), creds); renewed == first || opened != 3 {
		t.Fatalf("a session near its expiry was reused: opened %d", opened)
	}
	bad := creds
	bad.Password = "wrong"
	if _, err := sc.Session(t.Context(), bad); err == nil {
		t.Fatal("a failed authentication returned a session")
	}
	now = now.Add(2 * time.Hour)
	if _, err := sc.Session(t.Context(), creds); err != nil {
		t.Fatal(err)
	}
	if sc.Len() != 1 {
		t.Fatalf("%d sessions cached after the others idled out, want 1", sc.Len())
	}
}

func TestCountingTransportService(t *testing.T) {
	ct := &countingTransport{}
	if got := ct.serviceOf("https://keystone:5000/v3/auth/tokens"); got != serviceIdentity {
		t.Fatalf("before the catalog is read: %s, want identity", got)
	}
	ct.endpoints.Store(&map[string]string{
		"http://127.0.0.1:5000/v3/": serviceIdentity, "http://127.0.0.1:8774/v2.1/": serviceCompute, "http://127.0.0.1:8778/": servicePlacement,
	})
	for url, want := range map[string]string{
		"http://127.0.0.1:8774/v2.1/os-services":          serviceCompute,
		"http://127.0.0.1:8778/resource_providers?name=x": servicePlacement,
		"http://127.0.0.1:5000/v3/auth/tokens":            serviceIdentity,
	} {
		if got := ct.serviceOf(url); got != want {
			t.Errorf("serviceOf(%s) = %s, want %s", url, got, want)
		}
	}
	if methodLabel("PROPFIND") != "OTHER" || methodLabel("GET") != "GET" {
		t.Error("methodLabel passes a method it does not know")
	}
}
