package perf

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestReadyForGeneration(t *testing.T) {
	obj := func(generation, observed int64, ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"generation": generation},
			"status":   map[string]any{"observedGeneration": observed},
		}}
		if ready != "" {
			_ = unstructured.SetNestedSlice(u.Object, []any{
				map[string]any{"type": "NovaReady", "status": "False"},
				map[string]any{"type": "Ready", "status": ready},
			}, "status", "conditions")
		}
		return u
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"Ready for its generation", obj(3, 3, "True"), true},
		{"Ready for an older generation", obj(3, 2, "True"), false},
		{"not Ready", obj(3, 3, "False"), false},
		{"no conditions", obj(3, 3, ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readyForGeneration(tc.obj); got != tc.want {
				t.Errorf("readyForGeneration = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRestoreConsoleProxy(t *testing.T) {
	cases := []struct {
		name     string
		original any
		had      bool
		want     string
	}{
		{"none before: removed", nil, false, `[{"op":"remove","path":"/spec/services/nova/consoleProxy"}]`},
		{"enabled without a hostname: replaced whole", map[string]any{"enabled": true}, true,
			`[{"op":"add","path":"/spec/services/nova/consoleProxy","value":{"enabled":true}}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(restoreConsoleProxy(tc.original, tc.had))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch = %s, want %s", got, tc.want)
			}
		})
	}
}
