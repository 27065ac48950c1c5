package targetcluster

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestPinPatchSetsOneKeyOnly(t *testing.T) {
	tests := []struct {
		name, cluster, fingerprint, want string
	}{
		{name: "plain name", cluster: "compute-a", fingerprint: "0123456789abcdef",
			want: `{"metadata":{"annotations":{"pin.endpoint.anvil.c5c3.io/compute-a":"0123456789abcdef"}}}`},
		// A Secret name may hold dots, which an annotation's name part
		// allows too; the merge patch must not read them as a path.
		{name: "dotted name", cluster: "edge.site-1", fingerprint: "fedcba9876543210",
			want: `{"metadata":{"annotations":{"pin.endpoint.anvil.c5c3.io/edge.site-1":"fedcba9876543210"}}}`},
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
			var parsed map[string]map[string]map[string]string
			if err := json.Unmarshal(got, &parsed); err != nil || len(parsed) != 1 || len(parsed["metadata"]) != 1 || len(parsed["metadata"]["annotations"]) != 1 {
				t.Errorf("the patch must touch exactly one annotation: %s", got)
			}
		})
	}
}

// Every cluster name a registration may have makes a valid annotation of
// each kind, so no name can be pinned or acknowledged under a key the
// apiserver refuses; two long names sharing a prefix get two keys.
func TestEndpointAnnotationsAreValidKeys(t *testing.T) {
	if PinAnnotation(strings.Repeat("d", 253)) == PinAnnotation(strings.Repeat("d", 252)+"e") {
		t.Error("two long names share a pin")
	}
	if got := PinAnnotation("compute-a"); got != "pin.endpoint.anvil.c5c3.io/compute-a" {
		t.Errorf("a short name is kept as it is: %s", got)
	}
	for _, cluster := range []string{"a", "compute-a", "edge.site-1", strings.Repeat("c", 63), strings.Repeat("d", 253)} {
		for _, key := range []string{PinAnnotation(cluster), AcceptEndpointAnnotation(cluster)} {
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				t.Errorf("%s is no valid annotation key: %v", key, errs)
			}
		}
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
