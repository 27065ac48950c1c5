package targetcluster

import (
	"testing"
	"time"
)

func TestFlapGate(t *testing.T) {
	type probe struct {
		at      int // seconds since the first probe
		changed bool
		notify  bool
	}
	tests := []struct {
		name   string
		probes []probe
	}{
		{name: "no change wakes nobody", probes: []probe{{0, false, false}, {5, false, false}, {10, false, false}}},
		{name: "a cluster that dies and comes back wakes them twice at once",
			probes: []probe{{0, true, true}, {5, false, false}, {10, true, true}}},
		{name: "a flapping cluster wakes them three times, then once a refill period",
			probes: []probe{{0, true, true}, {5, true, true}, {10, true, true},
				{15, true, false}, {20, true, false}, {25, true, false}, {30, true, false}, {35, true, true},
				{40, true, false}, {50, true, false}, {58, false, false}, {70, true, true}, {75, false, false}}},
		{name: "a held change goes out on a later probe without a new change",
			probes: []probe{{0, true, true}, {1, true, true}, {2, true, true}, {3, true, false},
				{20, false, false}, {33, false, true}, {40, false, false}}},
		{name: "a quiet period refills the bucket, no further",
			probes: []probe{{0, true, true}, {1, true, true}, {2, true, true},
				{600, true, true}, {601, true, true}, {602, true, true}, {603, true, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFlapGate(3, 30*time.Second)
			t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
			for _, p := range tt.probes {
				if got := g.Observe(t0.Add(time.Duration(p.at)*time.Second), p.changed); got != p.notify {
					t.Fatalf("probe at %d s (changed %v): notify %v, want %v", p.at, p.changed, got, p.notify)
				}
			}
		})
	}
}
