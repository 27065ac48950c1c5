package devstack

import (
	"slices"
	"strings"
	"testing"
)

func TestPodRunnerEnv(t *testing.T) {
	tests := []struct {
		cluster string
		want    []string
	}{
		{ManagementCluster, []string{"REQUESTS_CA_BUNDLE=/ca.crt"}},
		{"compute-a", []string{"REQUESTS_CA_BUNDLE=/ca.crt", "OS_DEFAULT__UPDATE_RESOURCES_INTERVAL=10"}},
	}
	for _, tt := range tests {
		if got := podRunnerEnv(tt.cluster, "/ca.crt"); !slices.Equal(got, tt.want) {
			t.Errorf("podRunnerEnv(%q) = %v, want %v", tt.cluster, got, tt.want)
		}
	}
}

// Every variable a runner's environment gets must reach its pods: the
// runner passes on only the names its --pass-env lists.
func TestPodRunnerPassesItsEnvironment(t *testing.T) {
	s := &Stack{dir: "/state"}
	for _, cluster := range []string{ManagementCluster, "compute-a"} {
		args := s.podRunnerArgs(cluster)
		for _, kv := range podRunnerEnv(cluster, "/ca.crt") {
			name, _, _ := strings.Cut(kv, "=")
			if !slices.Contains(args, "--pass-env="+name) {
				t.Errorf("%s: the runner gets %s but does not pass it on: %v", cluster, name, args)
			}
		}
	}
}
