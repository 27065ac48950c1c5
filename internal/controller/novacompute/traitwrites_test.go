package novacompute

import (
	"testing"
	"time"
)

func TestTraitsWaitRequeue(t *testing.T) {
	now := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		lastWrite time.Time
		want      time.Duration
	}{
		{"no write known, as after a restart", time.Time{}, nodeWaitRequeue},
		{"written in this pass", now, registrationPoll},
		{"written a minute ago", now.Add(-time.Minute), registrationPoll},
		{"written just inside the window", now.Add(-registrationWindow + time.Second), registrationPoll},
		{"written as long ago as the window", now.Add(-registrationWindow), nodeWaitRequeue},
		{"written an hour ago", now.Add(-time.Hour), nodeWaitRequeue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TraitsWaitRequeue(tt.lastWrite, now); got != tt.want {
				t.Errorf("TraitsWaitRequeue = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTraitWritesForgetsOldWrites(t *testing.T) {
	now := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	var w traitWrites
	if !w.at("a").IsZero() {
		t.Fatal("an unknown pool has a write")
	}
	w.wrote("a", now)
	w.wrote("b", now.Add(registrationWindow))
	if !w.at("a").IsZero() {
		t.Error("a write as old as the window was kept")
	}
	if got := w.at("b"); !got.Equal(now.Add(registrationWindow)) {
		t.Errorf("b's write = %v", got)
	}
}
