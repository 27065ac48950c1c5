package testenv

import "testing"

// Long skips only when make test's variable is set, and a plain go test
// runs every long suite.
func TestLongSkipsOnlyWhenTheGateAsks(t *testing.T) {
	for _, tc := range []struct {
		value string
		skips bool
	}{
		{"", false},
		{"1", true},
	} {
		t.Run("ANVIL_SKIP_LONG_SUITES="+tc.value, func(t *testing.T) {
			t.Setenv(SkipLongSuitesEnv, tc.value)
			if got := SkipsLongSuites(); got != tc.skips {
				t.Fatalf("SkipsLongSuites() = %v, want %v", got, tc.skips)
			}
			ran := false
			t.Run("suite", func(t *testing.T) {
				Long(t, "test-all")
				ran = true
			})
			if ran == tc.skips {
				t.Errorf("the long suite ran = %v with %s=%q", ran, SkipLongSuitesEnv, tc.value)
			}
		})
	}
}
