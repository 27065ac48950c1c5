package novacompute

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novadb"
)

// TestListingShareTakesOnlyNewerListings covers when a pass takes a
// listing another pass started: only one that began after it did.
func TestListingShareTakesOnlyNewerListings(t *testing.T) {
	var s listingShare[[]string]
	ctx := context.Background()
	var calls atomic.Int32
	fetch := func(answer string) func(context.Context) ([]string, error) {
		return func(context.Context) ([]string, error) {
			calls.Add(1)
			return []string{answer}, nil
		}
	}
	before := time.Now()
	first, _ := s.get(ctx, "nova", before, fetch("first"))
	// A pass that began before the first listing takes it.
	again, _ := s.get(ctx, "nova", before, fetch("second"))
	if first[0] != "first" || again[0] != "first" || calls.Load() != 1 {
		t.Fatalf("a pass older than the listing: got %v and %v after %d listings, want the first listing twice", first, again, calls.Load())
	}
	// A pass that began after it lists anew, and so does another Nova.
	later, _ := s.get(ctx, "nova", time.Now().Add(time.Millisecond), fetch("third"))
	other, _ := s.get(ctx, "other", before, fetch("fourth"))
	if later[0] != "third" || other[0] != "fourth" || calls.Load() != 3 {
		t.Fatalf("a newer pass or another key: got %v and %v after %d listings, want listings of their own", later, other, calls.Load())
	}
}

// TestListingShareJoinsTheListingInFlight covers two passes at once: the
// second waits for the first one's listing and gets its answer, failure
// included.
func TestListingShareJoinsTheListingInFlight(t *testing.T) {
	var s listingShare[[]string]
	since := time.Now()
	release := make(chan struct{})
	started := make(chan struct{})
	boom := errors.New("nova answered 500")
	first := make(chan error, 1)
	go func() {
		_, err := s.get(context.Background(), "nova", since, func(context.Context) ([]string, error) {
			close(started)
			<-release
			return nil, boom
		})
		first <- err
	}()
	<-started
	joined := make(chan error, 1)
	go func() {
		_, err := s.get(context.Background(), "nova", since, func(context.Context) ([]string, error) {
			t.Error("the second pass listed on its own")
			return nil, nil
		})
		joined <- err
	}()
	// A pass whose context ends stops waiting.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.get(gone, "nova", since, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled pass: %v, want context.Canceled", err)
	}
	close(release)
	if err := <-joined; !errors.Is(err, boom) {
		t.Errorf("the joining pass: %v, want the shared failure", err)
	}
	if err := <-first; !errors.Is(err, boom) {
		t.Errorf("the listing pass: %v, want its failure", err)
	}
}

// TestFailedBuildsKey covers which reads of the cell database pools share:
// those of one Nova, database and user, whatever the password, which the
// key never holds.
func TestFailedBuildsKey(t *testing.T) {
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Namespace: "openstack", Name: "nova"}}
	base := novadb.Config{Host: "db.openstack.svc", Port: 3306, Database: "nova_cell1", Username: "nova", Password: "s3cret-value"}
	with := func(edit func(c *novadb.Config)) novadb.Config {
		c := base
		edit(&c)
		return c
	}
	other := nova.DeepCopy()
	other.Name = "nova-b"
	tests := []struct {
		name  string
		nova  *novav1alpha1.Nova
		cfg   novadb.Config
		share bool
	}{
		{name: "another password", nova: nova, cfg: with(func(c *novadb.Config) { c.Password = "rotated" }), share: true},
		{name: "another host", nova: nova, cfg: with(func(c *novadb.Config) { c.Host = "db2" })},
		{name: "another port", nova: nova, cfg: with(func(c *novadb.Config) { c.Port = 3307 })},
		{name: "another database", nova: nova, cfg: with(func(c *novadb.Config) { c.Database = "nova" })},
		{name: "another user", nova: nova, cfg: with(func(c *novadb.Config) { c.Username = "admin" })},
		{name: "another Nova", nova: other, cfg: base},
	}
	want := failedBuildsKey(nova, base)
	if strings.Contains(want, base.Password) {
		t.Fatal("the key holds the database password")
	}
	for _, tt := range tests {
		if got := failedBuildsKey(tt.nova, tt.cfg) == want; got != tt.share {
			t.Errorf("%s: shares the read = %v, want %v", tt.name, got, tt.share)
		}
	}
}
