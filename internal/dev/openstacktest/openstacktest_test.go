package openstacktest

import "testing"

func TestAllRunning(t *testing.T) {
	tests := []struct {
		status string
		want   bool
	}{
		{"mariadb         running  pid 1 port 13306\nkeystone        running  pid 2 port 15500\n", true},
		{"mariadb         running  pid 1 port 13306\nnova-api        stopped  pid -  port 18774\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := allRunning(tt.status); got != tt.want {
			t.Errorf("allRunning(%q) = %v, want %v", tt.status, got, tt.want)
		}
	}
}
