package perf

import "testing"

func TestWant(t *testing.T) {
	cases := []struct {
		name  string
		w     want
		value string
		holds bool
	}{
		{"equal, same", equal("password", "p1"), "p1", true},
		{"equal, a longer value", equal("password", "p1"), "p10", false},
		{"equal, empty", equal("password", "p1"), "", false},
		{"in the file, in a file", inConfig("//console-a-1.bench.invalid/"),
			"[vnc]\nnovncproxy_base_url = https://console-a-1.bench.invalid/vnc_lite.html\n", true},
		{"in the file, a longer host", inConfig("//console-a-1.bench.invalid/"),
			"novncproxy_base_url = https://console-a-10.bench.invalid/vnc_lite.html\n", false},
		{"in the file, debug on", inConfig("debug = true\n"), "[DEFAULT]\ndebug = true\n", true},
		{"in the file, debug off", inConfig("debug = true\n"), "[DEFAULT]\ndebug = false\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.holds([]byte(tc.value)); got != tc.holds {
				t.Errorf("holds = %v, want %v", got, tc.holds)
			}
		})
	}
}
