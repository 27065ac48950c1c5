package targetcluster

import (
	"encoding/json"
	"testing"
)

func TestPinPatchSetsOneKeyOnly(t *testing.T) {
	tests := []struct {
		name, cluster, fingerprint, want string
	}{
		{name: "plain name", cluster: "compute-a", fingerprint: "0123456789abcdef", want: `{"data":{"compute-a":"0123456789abcdef"}}`},
		// A Secret name may hold dots; a ConfigMap key may too, and the
		// merge patch must not read them as a path.
		{name: "dotted name", cluster: "edge.site-1", fingerprint: "fedcba9876543210", want: `{"data":{"edge.site-1":"fedcba9876543210"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pinPatch(tt.cluster, tt.fingerprint)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("pinPatch = %s, want %s", got, tt.want)
			}
			var parsed map[string]map[string]string
			if err := json.Unmarshal(got, &parsed); err != nil || len(parsed) != 1 || len(parsed["data"]) != 1 {
				t.Errorf("the patch must touch exactly one data key: %s", got)
			}
		})
	}
}

func TestStoresPinOnlyForANewTrustedEndpoint(t *testing.T) {
	tests := []struct {
		decision EndpointDecision
		want     bool
	}{
		{EndpointFirst, true},
		{EndpointChangeAccepted, true},
		// The stored pin already names it: a settled system writes nothing.
		{EndpointUnchanged, false},
		// A refused endpoint must never become the pin.
		{EndpointChangeRefused, false},
	}
	for _, tt := range tests {
		if got := storesPin(tt.decision); got != tt.want {
			t.Errorf("storesPin(%s) = %v, want %v", tt.decision, got, tt.want)
		}
	}
}
