package netutil

import "testing"

func TestFreeLoopbackPortsAreDistinct(t *testing.T) {
	ports, err := FreeLoopbackPorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports = %v", ports)
		}
		seen[p] = true
	}
}
